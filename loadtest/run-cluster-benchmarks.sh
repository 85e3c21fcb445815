#!/usr/bin/env bash
# Cluster benchmarks (issue 6): Herald instances sharing one redis-server on
# loopback, measured with herald-loadtest. Writes docs/benchmarks/cluster.md.
#
#   1. Cross-instance cost: 10,000 SSE subscribers on instance B; publications
#      sent to B itself ("local") and then to instance A ("cross": through
#      Redis pub/sub). Both runs in cluster mode, low rate, so the difference
#      in p99 is what the hop through Redis adds.
#   2. 100,000 connections over six instances (each under the 20,000-file
#      limit), `spread` scenario (a stream: and a user: channel per client,
#      SSE and WebSocket mixed), steady publishing on one instance.
#
# Not part of the tests: it takes about 5 minutes and keeps both cores busy.
# usage: loadtest/run-cluster-benchmarks.sh [OUTPUT.md]
#   env: BUILD (build dir), BIG_CONNECTIONS (100000), INSTANCES (6)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
bin=$build/bin
out=${1:-$root/docs/benchmarks/cluster.md}
BIG=${BIG_CONNECTIONS:-100000}
INSTANCES=${INSTANCES:-6}

for tool in redis-server python3; do
  command -v "$tool" >/dev/null || { echo "run-cluster-benchmarks: $tool is needed" >&2; exit 1; }
done
for b in herald herald-loadtest; do
  [[ -x $bin/$b ]] || { echo "run-cluster-benchmarks: $bin/$b missing: build first" >&2; exit 1; }
done

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

redis_port=$(free_port)
redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
  --dir "$work" --logfile "$work/redis.log" --maxclients 1000 >/dev/null 2>&1 &
redis_pid=$!
pids+=("$redis_pid")
for _ in $(seq 1 50); do
  redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
  sleep 0.1
done

# start_instances N: sets ports[] and server_pids[] (fresh instances).
ports=()
server_pids=()
start_instances() {
  ports=()
  server_pids=()
  local i log
  for i in $(seq 1 "$1"); do
    log=$work/herald$i.log
    "$bin/herald" --port=0 --host=127.0.0.1 --insecure --max-connections-per-ip=0 \
      --redis-url="redis://127.0.0.1:$redis_port" >"$log" 2>&1 &
    server_pids+=("$!")
    pids+=("$!")
  done
  for i in $(seq 1 "$1"); do
    log=$work/herald$i.log
    local port=
    for _ in $(seq 1 100); do
      port=$(grep -o 'listening on 127\.0\.0\.1:[0-9]*' "$log" | head -n1 | sed 's/.*://')
      [[ -n $port ]] && break
      sleep 0.1
    done
    [[ -n $port ]] || { echo "herald $i did not start" >&2; cat "$log" >&2; exit 1; }
    ports+=("$port")
  done
  for p in "${ports[@]}"; do
    for _ in $(seq 1 100); do
      curl -fs "http://127.0.0.1:$p/readyz" >/dev/null 2>&1 && break
      sleep 0.1
    done
  done
}
stop_instances() {
  for p in "${server_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${server_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  sleep 2
}

commands=()
run() {
  local name=$1
  shift
  local cmd=("$bin/herald-loadtest" --quiet --json-file "$work/$name.json" "$@")
  echo "== $name: ${cmd[*]}"
  "${cmd[@]}" | tee "$work/$name.txt" || echo "   (checks failed: see the figures)"
  commands+=("$name|herald-loadtest $*")
}

# 1. local vs cross-instance, 10,000 subscribers on B.
start_instances 2
A=127.0.0.1:${ports[0]}
B=127.0.0.1:${ports[1]}
common=(--scenario fanout --transport sse --connections 10000 --publications 40 --rate 2
        --source-addrs 127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4 --server-pids "${server_pids[1]}")
run cluster-local --target "$B" --publish-target "$B" "${common[@]}"
run cluster-cross --target "$B" --publish-target "$A" "${common[@]}"
run cluster-local-2 --target "$B" --publish-target "$B" "${common[@]}"
run cluster-cross-2 --target "$B" --publish-target "$A" "${common[@]}"
stop_instances

# 2. BIG connections over INSTANCES instances, spread scenario.
start_instances "$INSTANCES"
targets=$(printf '127.0.0.1:%s,' "${ports[@]}")
targets=${targets%,}
spids=$(IFS=,; echo "${server_pids[*]}")
srcs=$(seq -s, -f '127.0.0.%g' 1 8)
workers=$(( (BIG + 12499) / 12500 ))
run spread-big --scenario spread --transport mix --connections "$BIG" --workers "$workers" \
  --source-addrs "$srcs" --target "$targets" --publish-target "127.0.0.1:${ports[0]}" \
  --server-pids "$spids" --ramp-rate 4000 --publications 3000 --rate 100 --duration 400
stop_instances

mkdir -p "$(dirname "$out")"
printf '%s\n' "${commands[@]}" >"$work/commands.txt"
python3 - "$work" "$out" "$INSTANCES" <<'PY'
import json, os, sys, datetime
work, out, instances = sys.argv[1:4]
def load(n):
    try:
        return json.load(open(os.path.join(work, n + ".json")))
    except OSError:
        return None
def ms(v): return f"{v:.2f}" if v < 10 else f"{v:.1f}"
L = []
w = L.append
w("# Cluster benchmarks")
w("")
w(f"Generated by `loadtest/run-cluster-benchmarks.sh` on {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}, "
  f"{os.cpu_count()} cores, unpinned (instances, Redis and the generator share both cores). "
  "Every instance runs `herald --insecure --max-connections-per-ip=0 --redis-url=redis://127.0.0.1:PORT` with its defaults.")
w("")
w("| run | connections | instances | publications ok | rate | deliveries | loss | dup | reorder | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | servers' peak RSS |")
w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for line in open(os.path.join(work, "commands.txt")):
    name = line.split("|", 1)[0]
    j = load(name)
    if not j:
        w(f"| {name} | no result |"); continue
    d, l, p = j["deliveries"], j["latency_ms"], j["publish"]
    rss = sum(s["peak_rss_bytes"] for s in j["servers"]) / 1048576 if j["servers"] else 0
    w(f"| {name} | {j['connections']['established']:,} | {len(j['servers']) or '?'} | {p['ok']:,} | {p['achieved_rate']:.1f}/s | "
      f"{d['received']:,} | {d['loss']:,} | {d['duplicates']:,} | {d['out_of_order']:,} | {ms(l['p50'])} | {ms(l['p90'])} | "
      f"{ms(l['p99'])} | {ms(l['p99_9'])} | {ms(l['max'])} | {rss:.0f} MiB |")
w("")
loc = [load(n) for n in ("cluster-local", "cluster-local-2")]
crs = [load(n) for n in ("cluster-cross", "cluster-cross-2")]
if all(loc) and all(crs):
    lp = sorted(j["latency_ms"]["p99"] for j in loc)
    cp = sorted(j["latency_ms"]["p99"] for j in crs)
    w(f"Cross-instance p99 minus local p99 (10,000 subscribers on one instance): "
      f"{cp[0] - lp[0]:+.1f} ms (best runs), {cp[-1] - lp[-1]:+.1f} ms (worst runs).")
    w("")
for line in open(os.path.join(work, "commands.txt")):
    name = line.split("|", 1)[0]
    j = load(name)
    if j:
        w(f"- {name}: {'pass' if j['pass'] else 'FAIL: ' + '; '.join(j['problems'])}")
w("")
w("## Commands")
w("")
w("```")
for line in open(os.path.join(work, "commands.txt")):
    name, cmd = line.rstrip("\n").split("|", 1)
    w(f"{name:16} {cmd}")
w("```")
open(out, "w").write("\n".join(L) + "\n")
print(f"run-cluster-benchmarks: wrote {out}")
PY
