#!/usr/bin/env bash
# Benchmarks Herald against herald-baseline with herald-loadtest and writes
# docs/benchmarks.md (date, machine, exact commands, figures).
#
# Not part of the tests: it takes about 15 minutes and keeps both cores busy.
# Every run gets a fresh server on a free loopback port, pinned with taskset
# to core 1 while the generator (parent + workers) is pinned to core 0, so
# neither steals the other's CPU. Herald runs with one CAF scheduler thread
# and one I/O thread to match its core. The baseline (loadtest/
# baseline_server.cpp) speaks SSE only and ignores channels, so it is run for
# the SSE presets where "every connection gets every publication" holds
# (idle and fanout).
#
# usage: loadtest/run-benchmarks.sh [OUTPUT.md]
#   env: CONNECTIONS (10000), BIG_CONNECTIONS (19000), FANOUT_RATE (publications/s, 2),
#        FANOUT_PUBLICATIONS (60), SERVER_CPU (1), GEN_CPU (0), BUILD (build dir),
#        ONLY (a regex: run only the benchmarks whose name matches),
#        FUZZ_SECONDS (600: each libFuzzer target runs this long after the benchmarks,
#        what it finds is kept as seeds in tests/fuzz/corpus/, scripts/fuzz.sh; 0: skip)
# needs: a build (cmake --build build), taskset (util-linux), python3.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
bin=$build/bin
out=${1:-$root/docs/benchmarks.md}
N=${CONNECTIONS:-10000}
BIG=${BIG_CONNECTIONS:-19000}
FANOUT_RATE=${FANOUT_RATE:-2}
FANOUT_PUBLICATIONS=${FANOUT_PUBLICATIONS:-60}
SERVER_CPU=${SERVER_CPU:-1}
GEN_CPU=${GEN_CPU:-0}
SOURCES=127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4

for tool in taskset python3; do
  command -v "$tool" >/dev/null || { echo "run-benchmarks: $tool is needed" >&2; exit 1; }
done
for b in herald herald-baseline herald-loadtest; do
  [[ -x $bin/$b ]] || { echo "run-benchmarks: $bin/$b missing: build first" >&2; exit 1; }
done

work=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n $server_pid ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# start_server herald|herald-unpinned|baseline: sets server_pid and server_port.
# herald-unpinned: no taskset, Herald's default threads (one CAF worker per
# core, one I/O thread): what the second core adds.
start_server() {
  local kind=$1 log=$work/server.log
  : >"$log"
  if [[ $kind == herald-unpinned ]]; then
    "$bin/herald" --port=0 --host=127.0.0.1 --insecure --max-connections-per-ip=0 >"$log" 2>&1 &
  elif [[ $kind == herald ]]; then
    taskset -c "$SERVER_CPU" "$bin/herald" --port=0 --host=127.0.0.1 --insecure \
      --scheduler.max-threads=1 --io-threads=1 --max-connections-per-ip=0 >"$log" 2>&1 &
  else
    taskset -c "$SERVER_CPU" "$bin/herald-baseline" 0 127.0.0.1 >"$log" 2>&1 &
  fi
  server_pid=$!
  server_port=
  for _ in $(seq 1 100); do
    server_port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$log" | head -n1)
    [[ -n $server_port ]] && return 0
    sleep 0.1
  done
  echo "run-benchmarks: $kind did not start" >&2
  cat "$log" >&2
  exit 1
}

stop_server() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
  sleep 2 # let TIME_WAIT sockets and memory settle between runs
}

commands=()
# bench NAME SERVER LOADTEST-ARGS...: one run on a fresh server.
bench() {
  local name=$1 kind=$2
  shift 2
  [[ -n ${ONLY:-} && ! $name =~ $ONLY ]] && return 0
  start_server "$kind"
  local cmd=(taskset -c "$GEN_CPU" "$bin/herald-loadtest" --target "127.0.0.1:$server_port"
             --server-pids "$server_pid" --source-addrs "$SOURCES" --quiet
             --json-file "$work/$name.json" "$@")
  echo "== $name ($kind): ${cmd[*]}"
  "${cmd[@]}" | tee "$work/$name.txt" || echo "   (checks failed: see the figures)"
  commands+=("$name|$kind|herald-loadtest $*")
  stop_server
}

# --- the runs -----------------------------------------------------------------
bench idle-sse-herald herald --scenario idle --transport sse --connections "$N" --hold-seconds 10
bench idle-sse-baseline baseline --scenario idle --transport sse --connections "$N" --hold-seconds 10
bench idle-ws-herald herald --scenario idle --transport ws --connections "$N" --hold-seconds 10
bench idle-big-sse-herald herald --scenario idle --transport sse --connections "$BIG" --workers 2 --hold-seconds 10
bench idle-big-ws-herald herald --scenario idle --transport ws --connections "$BIG" --workers 2 --hold-seconds 10
bench idle-big-baseline baseline --scenario idle --transport sse --connections "$BIG" --workers 2 --hold-seconds 10
bench fanout-sse-herald herald --scenario fanout --transport sse --connections "$N" \
  --publications "$FANOUT_PUBLICATIONS" --rate "$FANOUT_RATE" --svg "$work/fanout-sse-herald.svg"
bench fanout-sse-baseline baseline --scenario fanout --transport sse --connections "$N" \
  --publications "$FANOUT_PUBLICATIONS" --rate "$FANOUT_RATE"
bench fanout-ws-herald herald --scenario fanout --transport ws --connections "$N" \
  --publications "$FANOUT_PUBLICATIONS" --rate "$FANOUT_RATE"
# A lone publication (one every 2 s): publish-to-last-subscriber latency.
bench lone-sse-herald herald --scenario fanout --transport sse --connections "$N" --publications 10 --rate 0.5
bench lone-sse-baseline baseline --scenario fanout --transport sse --connections "$N" --publications 10 --rate 0.5
bench lone-ws-herald herald --scenario fanout --transport ws --connections "$N" --publications 10 --rate 0.5
bench fanout-max-ws-herald herald --scenario fanout --transport ws --connections "$N" --find-max \
  --rate 1 --step-seconds 5 --step-factor 1.5
bench fanout-max-unpinned-herald herald-unpinned --scenario fanout --transport sse --connections "$N" --find-max \
  --rate 1 --step-seconds 5 --step-factor 1.5
bench fanout-max-herald herald --scenario fanout --transport sse --connections "$N" --find-max \
  --rate 1 --step-seconds 5 --step-factor 1.5
bench fanout-max-baseline baseline --scenario fanout --transport sse --connections "$N" --find-max \
  --rate 1 --step-seconds 5 --step-factor 1.5
bench spread-mix-herald herald --scenario spread --transport mix --connections "$N" \
  --publications 4000 --rate 400
bench slow-sse-herald herald --scenario slow --transport sse --connections "$N" \
  --publications 250 --rate "$FANOUT_RATE" --payload-bytes 16384 --slow-share 0.1
bench storm-mix-herald herald --scenario reconnect-storm --transport mix --connections "$N" \
  --publications 2000 --rate 200

# --- the report -----------------------------------------------------------------
mkdir -p "$(dirname "$out")"
printf '%s\n' "${commands[@]}" >"$work/commands.txt"
python3 - "$work" "$out" "$SERVER_CPU" "$GEN_CPU" <<'PY'
import json, os, platform, subprocess, sys, datetime
work, out, server_cpu, gen_cpu = sys.argv[1:5]

def load(name):
    try:
        with open(os.path.join(work, name + ".json")) as f:
            return json.load(f)
    except OSError:
        return None

def mib(b): return f"{b / 1048576:.1f}"
def ms(v): return f"{v:.2f}" if v < 10 else f"{v:.1f}"

cpu = "?"
with open("/proc/cpuinfo") as f:
    for line in f:
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
lines = []
w = lines.append
w("# Benchmarks")
w("")
w(f"Generated by `loadtest/run-benchmarks.sh` on {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}.")
w("")
w(f"Machine: {os.cpu_count()} cores ({cpu}), kernel {platform.release()}. "
  f"Server pinned to core {server_cpu} (`taskset`), load generator (parent and workers) to core {gen_cpu}. "
  "Herald runs with `--scheduler.max-threads=1 --io-threads=1`. Every run starts a fresh server. "
  "Latency is publish-to-receive (the publication carries its CLOCK_MONOTONIC send time), "
  "merged over all subscribers; memory per connection is (RSS after connecting - RSS before) / connections.")
w("")
w("## Memory per idle connection")
w("")
w("| run | server | connections | established in | RSS before | RSS connected | per connection |")
w("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
cmds = [l.rstrip("\n").split("|", 2) for l in open(os.path.join(work, "commands.txt"))]
for name, kind, _ in cmds:
    if not name.startswith("idle"):
        continue
    j = load(name)
    if not j or not j["servers"]:
        continue
    s = j["servers"][0]
    w(f"| {name} ({j['run']['transport']}) | {kind} | {j['connections']['established']:,} | "
      f"{j['connections']['establish_s']:.1f} s | {mib(s['before']['rss_bytes'])} MiB | "
      f"{mib(s['after_connect']['rss_bytes'])} MiB | {s['bytes_per_connection'] / 1024:.1f} KiB |")
w("")
w("## Publishing")
w("")
w("| run | server | connections | publications | rate asked / achieved | deliveries/s | loss | dup | reorder | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | server CPU (% core) | server CPU µs/delivery | peak RSS |")
w("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for name, kind, _ in cmds:
    if name.startswith("idle") or "max" in name:
        continue
    j = load(name)
    if not j:
        continue
    d, l, p = j["deliveries"], j["latency_ms"], j["publish"]
    s = j["servers"][0] if j["servers"] else None
    cpu_pct = f"{s['publish_cpu_pct']:.0f}%" if s else "?"
    us = f"{1e6 * s['publish_cpu_s'] / d['received']:.1f}" if s and d["received"] else "?"
    w(f"| {name} | {kind} | {j['connections']['established']:,} | {p['ok']:,} | {j['run']['rate']:g} / {p['achieved_rate']:.1f} | "
      f"{d['per_second']:,.0f} | {d['loss']:,} | {d['duplicates']:,} | {d['out_of_order']:,} | {ms(l['p50'])} | {ms(l['p90'])} | "
      f"{ms(l['p99'])} | {ms(l['p99_9'])} | {ms(l['max'])} | {cpu_pct} | {us} | {mib(s['peak_rss_bytes']) + ' MiB' if s else '?'} |")
w("")
w("## Maximum sustained fan-out rate (--find-max)")
w("")
w("A step passes with no loss, p99 <= 1 s and the publisher keeping up (>= 90 % of the asked rate).")
w("")
w("| run | server | connections | max publications/s | deliveries/s at that rate | p99 ms at that rate |")
w("| --- | --- | ---: | ---: | ---: | ---: |")
for name, kind, _ in cmds:
    if "max" not in name:
        continue
    j = load(name)
    if not j or "find_max" not in j:
        continue
    fm = j["find_max"]
    best = [s for s in fm["steps"] if s["pass"]]
    b = best[-1] if best else None
    w(f"| {name} | {kind} | {j['connections']['established']:,} | {fm['max_sustained_rate']:g} | "
      f"{(b['deliveries_per_s'] if b else 0):,.0f} | {ms(b['latency_ms']['p99']) if b else '-'} |")
w("")
w("## Other checks")
w("")
for name, kind, _ in cmds:
    j = load(name)
    if not j:
        w(f"- {name}: no result")
        continue
    extra = ""
    if "reconnect_storm" in j:
        rs = j["reconnect_storm"]
        extra = (f"; storm: {rs['resumed']:,} resumed, {rs['resume_failed']:,} failed, over in {rs['storm_s']:.2f} s, "
                 f"resume p99 {ms(rs['resume_ms']['p99'])} ms")
    if j["connections"]["slow"]:
        c = j["connections"]
        extra += f"; slow: {c['slow']:,} slow clients, {c['slow_closed_by_server']:,} closed by the server"
    verdict = "pass" if j["pass"] else "FAIL: " + "; ".join(j["problems"])
    w(f"- {name} ({kind}): {verdict}{extra}")
w("")
w("## Commands")
w("")
w("Each run: a fresh server (`taskset -c " + server_cpu + " build/bin/herald --port=0 --host=127.0.0.1 --insecure "
  "--scheduler.max-threads=1 --io-threads=1`, or `build/bin/herald-baseline 0`), then")
w("`taskset -c " + gen_cpu + " build/bin/herald-loadtest --target 127.0.0.1:PORT --server-pids PID "
  "--source-addrs 127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4 --quiet` plus:")
w("")
w("```")
for name, kind, cmd in cmds:
    w(f"{name:22} {kind:9} {cmd}")
w("```")
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"run-benchmarks: wrote {out}")
PY

# --- long fuzzing ----------------------------------------------------------------
# Each libFuzzer target for FUZZ_SECONDS (10 minutes by default, 70 in all),
# keeping what it finds as seeds (tests/fuzz/corpus/<target>/): commit them.
FUZZ_SECONDS=${FUZZ_SECONDS:-600}
if [[ $FUZZ_SECONDS -gt 0 && -z ${ONLY:-} ]]; then
  echo "run-benchmarks: fuzzing each target for $FUZZ_SECONDS s" >&2
  HERALD_FUZZ_KEEP=1 "$root/scripts/fuzz.sh" "$FUZZ_SECONDS"
fi
