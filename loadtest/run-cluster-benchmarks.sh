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
#   With REDIS_CLUSTER=1 (issue 11), also on a Redis Cluster of 3 masters
#   (REDIS_CLUSTER_REPLICAS replicas each, default 0) started here on loopback:
#   3. the same BIG_CONNECTIONS `spread` run over INSTANCES instances with
#      --redis-url=redis+cluster://... ("spread-big-rc");
#   4. publish throughput, publications acknowledged per second over many
#      channels (`spread`: each publication names one of THROUGHPUT_CHANNELS
#      stream: channels and one user: channel; THROUGHPUT_CONNECTIONS
#      subscribers, --rate far above what the servers answer, so the
#      publisher's window of PUBLISH_CONNS x PUBLISH_INFLIGHT pipelined
#      requests sets the pace), through THROUGHPUT_INSTANCES instances, first
#      on the one Redis ("publish-1redis"), then on the cluster
#      ("publish-3masters"), in the same run.
#
# Not part of the tests: it takes about 5 minutes (10 with REDIS_CLUSTER=1)
# and keeps both cores busy.
# usage: loadtest/run-cluster-benchmarks.sh [OUTPUT.md]
#   env: BUILD (build dir), BIG_CONNECTIONS (100000), INSTANCES (6),
#        BIG_PUBLICATIONS (3000, at 100/s), CROSS_CONNECTIONS (10000),
#        RUNS (which parts: "cross big", plus "cluster-big throughput" with
#        REDIS_CLUSTER=1), REDIS_CLUSTER (0), REDIS_CLUSTER_REPLICAS (0),
#        THROUGHPUT_INSTANCES (2), THROUGHPUT_CONNECTIONS (2000),
#        THROUGHPUT_CHANNELS (1000), THROUGHPUT_PUBLICATIONS (30000),
#        PUBLISH_CONNS (8), PUBLISH_INFLIGHT (16)
# Smoke test at small scale (a minute or two):
#   REDIS_CLUSTER=1 BIG_CONNECTIONS=3000 BIG_PUBLICATIONS=300 CROSS_CONNECTIONS=1000 \
#     THROUGHPUT_PUBLICATIONS=3000 loadtest/run-cluster-benchmarks.sh /tmp/cluster-smoke.md
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
bin=$build/bin
out=${1:-$root/docs/benchmarks/cluster.md}
BIG=${BIG_CONNECTIONS:-100000}
INSTANCES=${INSTANCES:-6}
BIG_PUBLICATIONS=${BIG_PUBLICATIONS:-3000}
CROSS_CONNECTIONS=${CROSS_CONNECTIONS:-10000}
REDIS_CLUSTER=${REDIS_CLUSTER:-0}
REDIS_CLUSTER_REPLICAS=${REDIS_CLUSTER_REPLICAS:-0}
if [[ $REDIS_CLUSTER == 1 ]]; then
  RUNS=${RUNS:-cross big cluster-big throughput}
else
  RUNS=${RUNS:-cross big}
fi
THROUGHPUT_INSTANCES=${THROUGHPUT_INSTANCES:-2}
THROUGHPUT_CONNECTIONS=${THROUGHPUT_CONNECTIONS:-2000}
THROUGHPUT_CHANNELS=${THROUGHPUT_CHANNELS:-1000}
THROUGHPUT_PUBLICATIONS=${THROUGHPUT_PUBLICATIONS:-30000}
PUBLISH_CONNS=${PUBLISH_CONNS:-8}
PUBLISH_INFLIGHT=${PUBLISH_INFLIGHT:-16}
wants() { [[ " $RUNS " == *" $1 "* ]]; }

for tool in redis-server redis-cli python3 curl; do
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
single_url="redis://127.0.0.1:$redis_port"
redis_url=$single_url

# start_redis_cluster: 3 masters (+ REDIS_CLUSTER_REPLICAS each) on free
# loopback ports, cluster bus on a free port each (--cluster-port), joined by
# redis-cli --cluster create; sets cluster_url. Stopped by PID at exit.
cluster_url=
start_redis_cluster() {
  local n=$((3 * (1 + REDIS_CLUSTER_REPLICAS))) i port addrs=()
  for i in $(seq 1 "$n"); do
    port=$(free_port)
    mkdir -p "$work/rc$port"
    redis-server --bind 127.0.0.1 --port "$port" --cluster-enabled yes \
      --cluster-port "$(free_port)" --cluster-config-file "$work/rc$port/nodes.conf" \
      --cluster-node-timeout 2000 --save '' --appendonly no --dir "$work/rc$port" \
      --logfile "$work/rc$port/redis.log" --maxclients 1000 >/dev/null 2>&1 &
    pids+=("$!")
    addrs+=("127.0.0.1:$port")
  done
  for a in "${addrs[@]}"; do
    for _ in $(seq 1 50); do
      redis-cli -p "${a#*:}" ping >/dev/null 2>&1 && break
      sleep 0.1
    done
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$REDIS_CLUSTER_REPLICAS" \
    --cluster-yes >"$work/cluster-create.log" 2>&1 \
    || { echo "redis-cli --cluster create failed" >&2; cat "$work/cluster-create.log" >&2; exit 1; }
  for a in "${addrs[@]}"; do
    for _ in $(seq 1 150); do
      redis-cli -p "${a#*:}" cluster info 2>/dev/null | grep -q '^cluster_state:ok' && break
      sleep 0.1
    done
    redis-cli -p "${a#*:}" cluster info | grep -q '^cluster_state:ok' \
      || { echo "Redis Cluster node $a: cluster_state is not ok" >&2; exit 1; }
  done
  cluster_url="redis+cluster://${addrs[0]},${addrs[1]}"
  echo "== Redis Cluster: ${addrs[*]} (3 masters, $REDIS_CLUSTER_REPLICAS replicas each)"
}

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
      --redis-url="$redis_url" >"$log" 2>&1 &
    server_pids+=("$!")
    pids+=("$!")
  done
  for i in $(seq 1 "$1"); do
    log=$work/herald$i.log
    local port=
    for _ in $(seq 1 100); do
      # (no match yet fails the pipeline: not a reason to stop under set -e)
      port=$(grep -o 'listening on 127\.0\.0\.1:[0-9]*' "$log" | head -n1 | sed 's/.*://' || true)
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
    curl -fs "http://127.0.0.1:$p/readyz" >/dev/null 2>&1 \
      || { echo "herald on port $p is not ready: $(curl -s "http://127.0.0.1:$p/readyz")" >&2; exit 1; }
  done
}
stop_instances() {
  for p in "${server_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${server_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  sleep 2
}

commands=()
# run NAME ARGS...: one herald-loadtest run against the instances running now
# (on $redis_url).
run() {
  local name=$1
  shift
  local cmd=("$bin/herald-loadtest" --quiet --json-file "$work/$name.json" "$@")
  local kind="1 Redis"
  [[ $redis_url == redis+cluster://* ]] && kind="Redis Cluster, 3 masters"
  echo "== $name ($kind): ${cmd[*]}"
  "${cmd[@]}" | tee "$work/$name.txt" || echo "   (checks failed: see the figures)"
  commands+=("$name|$kind|herald-loadtest $*")
}

# 1. local vs cross-instance, CROSS_CONNECTIONS subscribers on B.
if wants cross; then
  start_instances 2
  A=127.0.0.1:${ports[0]}
  B=127.0.0.1:${ports[1]}
  common=(--scenario fanout --transport sse --connections "$CROSS_CONNECTIONS" --publications 40 --rate 2
          --source-addrs 127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4 --server-pids "${server_pids[1]}")
  run cluster-local --target "$B" --publish-target "$B" "${common[@]}"
  run cluster-cross --target "$B" --publish-target "$A" "${common[@]}"
  run cluster-local-2 --target "$B" --publish-target "$B" "${common[@]}"
  run cluster-cross-2 --target "$B" --publish-target "$A" "${common[@]}"
  stop_instances
fi

# 2. (and 3.) BIG connections over INSTANCES instances, spread scenario.
spread_big() { # spread_big NAME
  start_instances "$INSTANCES"
  local targets spids srcs workers
  targets=$(printf '127.0.0.1:%s,' "${ports[@]}")
  targets=${targets%,}
  spids=$(IFS=,; echo "${server_pids[*]}")
  srcs=$(seq -s, -f '127.0.0.%g' 1 8)
  workers=$(( (BIG + 12499) / 12500 ))
  run "$1" --scenario spread --transport mix --connections "$BIG" --workers "$workers" \
    --source-addrs "$srcs" --target "$targets" --publish-target "127.0.0.1:${ports[0]}" \
    --server-pids "$spids" --ramp-rate 4000 --publications "$BIG_PUBLICATIONS" --rate 100 --duration 400
  stop_instances
}
# 4. Publish throughput: THROUGHPUT_INSTANCES instances, publications to the
# first, subscribers (SSE and WebSocket) on all of them, THROUGHPUT_CHANNELS
# stream: channels, a rate no server here reaches (so publications/s
# acknowledged is the figure).
throughput() { # throughput NAME
  start_instances "$THROUGHPUT_INSTANCES"
  local targets spids
  targets=$(printf '127.0.0.1:%s,' "${ports[@]}")
  targets=${targets%,}
  spids=$(IFS=,; echo "${server_pids[*]}")
  run "$1" --scenario spread --transport mix --connections "$THROUGHPUT_CONNECTIONS" \
    --channels "$THROUGHPUT_CHANNELS" --target "$targets" --publish-target "127.0.0.1:${ports[0]}" \
    --server-pids "$spids" --publications "$THROUGHPUT_PUBLICATIONS" --rate 1000000 \
    --publish-conns "$PUBLISH_CONNS" --publish-inflight "$PUBLISH_INFLIGHT" --duration 300
  stop_instances
}

wants big && spread_big spread-big
wants throughput && throughput publish-1redis
if wants cluster-big || wants throughput; then
  start_redis_cluster
  redis_url=$cluster_url
  wants cluster-big && spread_big spread-big-rc
  wants throughput && throughput publish-3masters
  redis_url=$single_url
fi

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
runs = [line.rstrip("\n").split("|", 2) for line in open(os.path.join(work, "commands.txt"))]
L = []
w = L.append
w("# Cluster benchmarks")
w("")
w(f"Generated by `loadtest/run-cluster-benchmarks.sh` on {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}, "
  f"{os.cpu_count()} cores, unpinned (instances, Redis and the generator share both cores). "
  "Every instance runs `herald --insecure --max-connections-per-ip=0 --redis-url=URL` with its defaults, URL "
  "`redis://127.0.0.1:PORT` (one redis-server) or `redis+cluster://...` (a Redis Cluster of 3 masters on loopback).")
w("")
w("| run | Redis | connections | instances | publications ok | rate | deliveries | loss | dup | reorder | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | servers' peak RSS |")
w("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for name, kind, _ in runs:
    j = load(name)
    if not j:
        w(f"| {name} | {kind} | no result |"); continue
    d, l, p = j["deliveries"], j["latency_ms"], j["publish"]
    rss = sum(s["peak_rss_bytes"] for s in j["servers"]) / 1048576 if j["servers"] else 0
    w(f"| {name} | {kind} | {j['connections']['established']:,} | {len(j['servers']) or '?'} | {p['ok']:,} | {p['achieved_rate']:.1f}/s | "
      f"{d['received']:,} | {d['loss']:,} | {d['duplicates']:,} | {d['out_of_order']:,} | {ms(l['p50'])} | {ms(l['p90'])} | "
      f"{ms(l['p99'])} | {ms(l['p99_9'])} | {ms(l['max'])} | {rss:.0f} MiB |")
w("")
loc = [load(n) for n in ("cluster-local", "cluster-local-2")]
crs = [load(n) for n in ("cluster-cross", "cluster-cross-2")]
if all(loc) and all(crs):
    lp = sorted(j["latency_ms"]["p99"] for j in loc)
    cp = sorted(j["latency_ms"]["p99"] for j in crs)
    w(f"Cross-instance p99 minus local p99 (subscribers on one instance): "
      f"{cp[0] - lp[0]:+.1f} ms (best runs), {cp[-1] - lp[-1]:+.1f} ms (worst runs).")
    w("")
thr = [(name, kind, load(name)) for name, kind, _ in runs if name.startswith("publish-")]
if any(j for _, _, j in thr):
    w("Publish throughput: publications acknowledged (200) per second, from the first request written to the "
      "last 200 read, each to two channels (a stream: and a user: channel, `spread` scenario) of many, through the "
      "first instance; the publisher keeps its "
      "window of pipelined requests full. Server CPU is the instances' user + system time while publishing, "
      "in percent of one core.")
    w("")
    w("| run | Redis | acknowledged/s | ok | failed | publish rtt p50 ms | p99 ms | deliveries/s | loss | servers' CPU while publishing |")
    w("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for name, kind, j in thr:
        if not j:
            w(f"| {name} | {kind} | no result |"); continue
        p, d = j["publish"], j["deliveries"]
        cpu = ", ".join(f"{s['publish_cpu_pct']:.0f} %" for s in j["servers"])
        w(f"| {name} | {kind} | {p.get('acked_rate', 0):,.0f} | {p['ok']:,} | {p['failed'] + p['unknown']:,} | "
          f"{ms(p['rtt_ms']['p50'])} | {ms(p['rtt_ms']['p99'])} | {d.get('per_second', 0) or 0:,.0f} | {d['loss']:,} | {cpu} |")
    w("")
for name, kind, _ in runs:
    j = load(name)
    if j:
        w(f"- {name}: {'pass' if j['pass'] else 'FAIL: ' + '; '.join(j['problems'])}")
w("")
w("## Commands")
w("")
w("```")
for name, kind, cmd in runs:
    w(f"{name:16} {cmd}")
w("```")
open(out, "w").write("\n".join(L) + "\n")
print(f"run-cluster-benchmarks: wrote {out}")
PY
