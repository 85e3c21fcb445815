#!/usr/bin/env bash
# The README's first command: installs what is missing, builds in Release, and
# runs herald on port 8080 (in-process mode) with the demo publisher feeding
# it payment-stream events. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh -DHERALD_BUILD_TESTS=OFF

port="${PORT:-8080}"
# Demo keys (docs/auth.md): a JWT secret for subscriber tokens and an API key
# for the publisher, made once and kept in build/demo-keys (mode 600).
keys=build/demo-keys
mkdir -p "$keys" && chmod 700 "$keys"
[ -s "$keys/jwt-secret" ] || (umask 077 && openssl rand -hex 32 >"$keys/jwt-secret")
[ -s "$keys/api-key" ] || (umask 077 && openssl rand -hex 24 >"$keys/api-key")
export HERALD_JWT_SECRET; HERALD_JWT_SECRET=$(cat "$keys/jwt-secret")
export HERALD_API_KEY; HERALD_API_KEY=$(cat "$keys/api-key")
./build/bin/herald --host=127.0.0.1 --port="$port" --anonymous-streams \
  --jwt-secret-file="$keys/jwt-secret" --api-key-file="$keys/api-key" &
herald_pid=$!
publisher_pid=""
cleanup() {
  [ -n "$publisher_pid" ] && kill "$publisher_pid" 2>/dev/null || true
  kill "$herald_pid" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

for _ in $(seq 1 50); do
  curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done

channels=$(node demo/publisher.mjs --print-channels)
first_stream=$(echo "$channels" | grep '^stream:' | head -1)
first_user=$(echo "$channels" | grep '^user:' | head -1)
token=$(node demo/token.mjs --sub "${first_user#user:}" --ttl 86400)
cat <<EOT

Herald is running on http://127.0.0.1:$port (in-process mode), fed by demo/publisher.mjs.
Demo keys: $keys (JWT secret, publish API key).
Channels of the demo:
$(echo "$channels" | sed 's/^/  /')

Watch with curl (stream channels need no token here: --anonymous-streams;
user:${first_user#user:} needs a token for that account, valid 24 h):
  curl -N "http://127.0.0.1:$port/v1/sse?channel=$first_stream"
  curl -N -H "Authorization: Bearer $token" "http://127.0.0.1:$port/v1/sse?envelope=1&channel=$first_stream&channel=$first_user"
Watch in a browser:
  http://127.0.0.1:$port/demo?channels=$first_stream,$first_user&token=$token
Publish (API key in $keys/api-key):
  curl -X POST -H "Authorization: Bearer \$(cat $keys/api-key)" http://127.0.0.1:$port/v1/publish -d '{"channel":"$first_stream","event":"note","data":1}'

EOT
node demo/publisher.mjs --url "http://127.0.0.1:$port" --interval-ms 1000 &
publisher_pid=$!
wait "$herald_pid"
