#!/usr/bin/env bash
# Benchmarks Herald against herald-baseline with herald-loadtest and writes a
# report (date, machine, exact commands, figures), by default
# docs/benchmarks/single-instance.md; docs/benchmarks.md is the hand-written
# summary and is never written by this script.
#
# Not part of the tests: it takes about 30 minutes and keeps both cores busy.
# Every run gets a fresh server on a free loopback port, pinned with taskset
# to core SERVER_CPU while the generator (parent + workers) is pinned to core
# GEN_CPU, so neither steals the other's CPU. Pinned Herald runs use one CAF
# scheduler thread and one I/O thread to match their core. One run,
# fanout-max-unpinned-sse-herald, uses both cores: Herald with
# --io-threads=2 and its other defaults, the generator not pinned either.
#
# The baseline (loadtest/baseline_server.cpp) speaks SSE and WebSocket and
# ignores channels (every connection gets every publication), so it is run
# for the single-channel presets, on both transports: idle, fanout at
# FANOUT_RATE, fanout at 10/s, a lone publication, find-max.
#
# The report starts with the targets of issue #10, each computed from the
# JSON results of the runs it needs (a target whose runs were skipped with
# ONLY says so): server CPU per delivery, 10/s and lone-publication p99
# against the baseline, the second core's gain, RSS per idle connection at
# BIG_CONNECTIONS, time to open CONNECTIONS WebSocket connections.
#
# Every run also draws its plots (herald-loadtest --svg, --throughput-svg)
# into a folder named after the report (docs/benchmarks/single-instance/),
# and the report shows them. storm-big-mix-herald drops BIG_CONNECTIONS
# clients at once while new subscribers keep arriving (issue #14).
#
# BEFORE=/path/to/an/older/herald also runs the fanout10-*, lone-* and
# idle-big-* presets (SSE and WebSocket) with that binary, pinned and with
# the same options, named *-before (e.g. fanout10-sse-before), right after
# the current Herald's run; the report then shows both side by side.
#
# usage: loadtest/run-benchmarks.sh [OUTPUT.md]
#   env: CONNECTIONS (10000), BIG_CONNECTIONS (19000), FANOUT_RATE (publications/s, 2),
#        FANOUT_PUBLICATIONS (60), FANOUT10_PUBLICATIONS (100, at 10/s),
#        LONE_PUBLICATIONS (10, at 0.5/s), IDLE_RAMP_RATE (new connections/s in the
#        idle-sse-* and idle-ws-* runs, 100000: as fast as the generator can, so the
#        server sets the time to open them; herald-loadtest's own default is 2000/s),
#        FIND_MAX_RATE (first step, 2), FIND_MAX_STEP_FACTOR (1.125: 4 steps = 1.6x),
#        FIND_MAX_STEP_SECONDS (5), SERVER_CPU (1), GEN_CPU (0), BUILD (build dir),
#        BEFORE (an older herald binary), ONLY (a regex: run only the benchmarks
#        whose name matches), FUZZ_SECONDS (600: each libFuzzer target runs this
#        long after the benchmarks, what it finds is kept as seeds in
#        tests/fuzz/corpus/, scripts/fuzz.sh; 0: skip)
# needs: a build (cmake --build build), taskset (util-linux), python3.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
bin=$build/bin
out=${1:-$root/docs/benchmarks/single-instance.md}
N=${CONNECTIONS:-10000}
BIG=${BIG_CONNECTIONS:-19000}
FANOUT_RATE=${FANOUT_RATE:-2}
FANOUT_PUBLICATIONS=${FANOUT_PUBLICATIONS:-60}
FANOUT10_PUBLICATIONS=${FANOUT10_PUBLICATIONS:-100}
LONE_PUBLICATIONS=${LONE_PUBLICATIONS:-10}
IDLE_RAMP_RATE=${IDLE_RAMP_RATE:-100000}
FIND_MAX_RATE=${FIND_MAX_RATE:-2}
FIND_MAX_STEP_FACTOR=${FIND_MAX_STEP_FACTOR:-1.125}
FIND_MAX_STEP_SECONDS=${FIND_MAX_STEP_SECONDS:-5}
SERVER_CPU=${SERVER_CPU:-1}
GEN_CPU=${GEN_CPU:-0}
BEFORE=${BEFORE:-}
SOURCES=127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4

for tool in taskset python3; do
  command -v "$tool" >/dev/null || { echo "run-benchmarks: $tool is needed" >&2; exit 1; }
done
for b in herald herald-baseline herald-loadtest; do
  [[ -x $bin/$b ]] || { echo "run-benchmarks: $bin/$b missing: build first" >&2; exit 1; }
done
if [[ -n $BEFORE ]]; then
  [[ -x $BEFORE ]] || { echo "run-benchmarks: BEFORE=$BEFORE is not an executable" >&2; exit 1; }
  BEFORE=$(cd "$(dirname "$BEFORE")" && pwd)/$(basename "$BEFORE")
fi

work=$(mktemp -d)
# The plots of every run (latency percentiles, throughput over time), next to
# the report: docs/benchmarks/single-instance/<run>-{latency,throughput}.svg.
plots=${out%.md}
mkdir -p "$plots"
server_pid=
cleanup() {
  if [[ -n $server_pid ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

herald_common=(--port=0 --host=127.0.0.1 --insecure --max-connections-per-ip=0)
herald_pinned=("${herald_common[@]}" --scheduler.max-threads=1 --io-threads=1)

# server_command KIND: sets srv, the command line of that server.
#   herald           the current build, pinned, one scheduler thread and one I/O thread
#   before           $BEFORE, the same way
#   herald-unpinned  the current build on both cores: --io-threads=2, other options default
#   baseline         herald-baseline, pinned
server_command() {
  case $1 in
    herald) srv=(taskset -c "$SERVER_CPU" "$bin/herald" "${herald_pinned[@]}") ;;
    before) srv=(taskset -c "$SERVER_CPU" "$BEFORE" "${herald_pinned[@]}") ;;
    herald-unpinned) srv=("$bin/herald" "${herald_common[@]}" --io-threads=2) ;;
    baseline) srv=(taskset -c "$SERVER_CPU" "$bin/herald-baseline" 0 127.0.0.1) ;;
    *) echo "run-benchmarks: unknown server kind $1" >&2; exit 1 ;;
  esac
}

# start_server KIND: sets server_pid and server_port.
start_server() {
  local kind=$1 log=$work/server.log
  : >"$log"
  server_command "$kind"
  "${srv[@]}" >"$log" 2>&1 &
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
  local gen=(taskset -c "$GEN_CPU")
  [[ $kind == herald-unpinned ]] && gen=()
  local cmd=("${gen[@]}" "$bin/herald-loadtest" --target "127.0.0.1:$server_port"
             --server-pids "$server_pid" --source-addrs "$SOURCES" --quiet
             --json-file "$work/$name.json" --svg "$plots/$name-latency.svg"
             --throughput-svg "$plots/$name-throughput.svg" "$@")
  rm -f "$plots/$name-latency.svg" "$plots/$name-throughput.svg"
  echo "== $name ($kind): ${srv[*]}"
  echo "   ${cmd[*]}"
  "${cmd[@]}" | tee "$work/$name.txt" || echo "   (checks failed: see the figures)"
  commands+=("$name|$kind|${gen[*]}|herald-loadtest $*")
  stop_server
}

# before NAME LOADTEST-ARGS...: the same run with $BEFORE, when given.
before() {
  [[ -z $BEFORE ]] || bench "$1" before "${@:2}"
}

# three_ways NAME LOADTEST-ARGS...: NAME-herald, NAME-before (with $BEFORE,
# when given) and NAME-baseline, one after the other, with the same arguments.
three_ways() {
  bench "$1-herald" herald "${@:2}"
  before "$1-before" "${@:2}"
  bench "$1-baseline" baseline "${@:2}"
}

# --- the runs -----------------------------------------------------------------
find_max=(--find-max --rate "$FIND_MAX_RATE" --step-seconds "$FIND_MAX_STEP_SECONDS"
          --step-factor "$FIND_MAX_STEP_FACTOR" --duration 300)
for t in sse ws; do
  idle=(--scenario idle --transport "$t" --connections "$N" --hold-seconds 10 --ramp-rate "$IDLE_RAMP_RATE")
  bench "idle-$t-herald" herald "${idle[@]}"
  bench "idle-$t-baseline" baseline "${idle[@]}"
done
for t in sse ws; do
  three_ways "idle-big-$t" --scenario idle --transport "$t" --connections "$BIG" --workers 2 --hold-seconds 10
done
for t in sse ws; do
  fanout=(--scenario fanout --transport "$t" --connections "$N" --publications "$FANOUT_PUBLICATIONS"
          --rate "$FANOUT_RATE")
  bench "fanout-$t-herald" herald "${fanout[@]}"
  bench "fanout-$t-baseline" baseline "${fanout[@]}"
done
# 10 publications/s to every subscriber on one pinned core.
for t in sse ws; do
  three_ways "fanout10-$t" --scenario fanout --transport "$t" --connections "$N" --publications "$FANOUT10_PUBLICATIONS" --rate 10
done
# A lone publication (one every 2 s): publish-to-last-subscriber latency.
for t in sse ws; do
  three_ways "lone-$t" --scenario fanout --transport "$t" --connections "$N" --publications "$LONE_PUBLICATIONS" --rate 0.5
done
for t in sse ws; do
  bench "fanout-max-$t-herald" herald --scenario fanout --transport "$t" --connections "$N" "${find_max[@]}"
  if [[ $t == sse ]]; then
    # What the second core adds: compared with fanout-max-sse-herald.
    bench fanout-max-unpinned-sse-herald herald-unpinned --scenario fanout --transport sse \
      --connections "$N" "${find_max[@]}"
  fi
  bench "fanout-max-$t-baseline" baseline --scenario fanout --transport "$t" --connections "$N" "${find_max[@]}"
done
bench spread-mix-herald herald --scenario spread --transport mix --connections "$N" \
  --publications 4000 --rate 400
bench slow-sse-herald herald --scenario slow --transport sse --connections "$N" \
  --publications 250 --rate "$FANOUT_RATE" --payload-bytes 16384 --slow-share 0.1
bench storm-mix-herald herald --scenario reconnect-storm --transport mix --connections "$N" \
  --publications 2000 --rate 200
# Issue #14: BIG_CONNECTIONS (19,000) clients dropped at once resume with their
# cursors while new subscribers keep arriving (the newcomer probe). At 200/s
# (1,900 subscribers a channel: 380,000 deliveries/s, beyond one core) the
# storm meets a server already behind; at 20/s (38,000/s) it meets one with room.
bench storm-big-mix-herald herald --scenario reconnect-storm --transport mix --connections "$BIG" \
  --workers 2 --publications 2000 --rate 200
bench storm-big20-mix-herald herald --scenario reconnect-storm --transport mix --connections "$BIG" \
  --workers 2 --publications 400 --rate 20

# --- the report -----------------------------------------------------------------
mkdir -p "$(dirname "$out")"
printf '%s\n' "${commands[@]}" >"$work/commands.txt"
# kind|server command line (paths under the source tree made relative)|version
{
  for kind in herald before herald-unpinned baseline; do
    [[ $kind == before && -z $BEFORE ]] && continue
    server_command "$kind"
    version=
    case $kind in
      herald | herald-unpinned) version=$("$bin/herald" --version 2>/dev/null | head -n1 || true) ;;
      before) version=$("$BEFORE" --version 2>/dev/null | head -n1 || true) ;;
    esac
    printf '%s|%s|%s\n' "$kind" "${srv[*]//$root\//}" "$version"
  done
} >"$work/servers.txt"
python3 - "$work" "$out" "$SERVER_CPU" "$GEN_CPU" "$N" "$BIG" "$plots" <<'PY'
import json, os, platform, sys, datetime
work, out, server_cpu, gen_cpu = sys.argv[1:5]
n_conn, big_conn = int(sys.argv[5]), int(sys.argv[6])
plots = sys.argv[7]

def load(name):
    try:
        with open(os.path.join(work, name + ".json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def mib(b): return f"{b / 1048576:.1f}"
def ms(v): return f"{v:.2f}" if v < 10 else f"{v:.1f}"

cpu = "?"
with open("/proc/cpuinfo") as f:
    for line in f:
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
cmds = [l.rstrip("\n").split("|", 3) for l in open(os.path.join(work, "commands.txt")) if l.strip()]
servers = {}
for l in open(os.path.join(work, "servers.txt")):
    kind, cmd, version = l.rstrip("\n").split("|", 2)
    servers[kind] = (cmd, version)

# --- figures from one run's JSON (None when missing) ---------------------------
def server(j):
    return j["servers"][0] if j and j.get("servers") else None

def cpu_us(j):  # server CPU while publishing, per delivery
    s = server(j)
    d = j["deliveries"]["received"] if j else 0
    return 1e6 * s["publish_cpu_s"] / d if s and d else None

def p99(j):
    return j["latency_ms"]["p99"] if j and j["deliveries"]["received"] else None

def kib(j):
    s = server(j)
    return s["bytes_per_connection"] / 1024 if s and j["connections"]["established"] else None

def establish(j):
    return j["connections"]["establish_s"] if j and j["connections"]["established"] else None

def sustained(j):  # deliveries/s sustained at the highest passing find-max step
    if not j or "find_max" not in j:
        return None
    fm = j["find_max"]
    if not any(s["pass"] for s in fm["steps"]):
        return 0.0
    return fm["max_sustained_rate"] * j["connections"]["established"]

def fmt_us(v): return f"{v:.1f} µs"
def fmt_ms(v): return f"{ms(v)} ms"
def fmt_kib(v): return f"{v:.2f} KiB"
def fmt_s(v): return f"{v:.2f} s"
def fmt_rate(v): return f"{v:,.0f}/s"

# --- targets of issue #10 --------------------------------------------------------
# Each: (what, runs, herald run, reference run, reference label, figure, format,
#        check, bound, before run or None).
#   check "le": herald/reference <= bound; "ge": herald/reference >= bound;
#   "abs": herald <= bound (the reference is shown for context).
def cpu_source(t):
    # server CPU per delivery: the FANOUT_RATE runs, else the 10/s ones
    for stem in (f"fanout-{t}", f"fanout10-{t}"):
        if load(stem + "-herald") and load(stem + "-baseline"):
            return stem
    return f"fanout-{t}"

targets = []
for t, T in (("sse", "SSE"), ("ws", "WebSocket")):
    stem = cpu_source(t)
    targets.append((f"server CPU per delivery, {T}", f"{stem}-*", f"{stem}-herald", f"{stem}-baseline",
                    "baseline", cpu_us, fmt_us, "le", 1.25, None))
for t, T in (("sse", "SSE"), ("ws", "WebSocket")):
    targets.append((f"10 publications/s to {n_conn:,} {T} subscribers, one pinned core: zero loss, p99",
                    f"fanout10-{t}-*", f"fanout10-{t}-herald", f"fanout10-{t}-baseline", "baseline",
                    p99, fmt_ms, "le", 1.5, f"fanout10-{t}-before"))
for t, T in (("sse", "SSE"), ("ws", "WebSocket")):
    targets.append((f"lone publication to {n_conn:,} {T} subscribers: p99", f"lone-{t}-*", f"lone-{t}-herald",
                    f"lone-{t}-baseline", "baseline", p99, fmt_ms, "le", 1.25, f"lone-{t}-before"))
targets.append(("both cores (`--io-threads=2`, generator unpinned) against one pinned core: deliveries/s (find-max, SSE)",
                "fanout-max-unpinned-sse-herald, fanout-max-sse-herald", "fanout-max-unpinned-sse-herald",
                "fanout-max-sse-herald", "pinned", sustained, fmt_rate, "ge", 1.6, None))
for t, T, bound in (("sse", "SSE", 5.0), ("ws", "WebSocket", 6.0)):
    targets.append((f"RSS per idle {T} connection at {big_conn:,}", f"idle-big-{t}-*", f"idle-big-{t}-herald",
                    f"idle-big-{t}-baseline", "baseline", kib, fmt_kib, "abs", bound, f"idle-big-{t}-before"))
targets.append((f"time to open {n_conn:,} WebSocket connections", "idle-ws-*", "idle-ws-herald", "idle-ws-baseline",
                "baseline", establish, fmt_s, "le", 1.2, None))

lines = []
w = lines.append
w("# Benchmarks")
w("")
w(f"Generated by `loadtest/run-benchmarks.sh` on {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}.")
w("")
w(f"Machine: {os.cpu_count()} cores ({cpu}), kernel {platform.release()}. "
  f"Server pinned to core {server_cpu} (`taskset`), load generator (parent and workers) to core {gen_cpu}, "
  "except in `fanout-max-unpinned-sse-herald` (both unpinned). "
  "Pinned Herald runs use `--scheduler.max-threads=1 --io-threads=1`; the unpinned one `--io-threads=2` "
  "and Herald's other defaults. Every run starts a fresh server. "
  "Latency is publish-to-receive (the publication carries its CLOCK_MONOTONIC send time), "
  "merged over all subscribers; memory per connection is (RSS after connecting - RSS before) / connections.")
w("")
for kind in ("herald", "before", "baseline"):
    if kind in servers and servers[kind][1]:
        label = {"herald": "Herald", "before": "Before (`BEFORE`)", "baseline": "Baseline"}[kind]
        w(f"- {label}: {servers[kind][1]}")
if "before" in servers:
    w(f"- `*-before` runs: `{servers['before'][0]}`, the older binary given as `BEFORE`, with the same options.")
w("")
w("## Targets (issue #10)")
w("")
w("Ratios are Herald's figure over the one it is compared with, from runs of this report. "
  "Server CPU per delivery is the server's CPU time while publishing over the deliveries received. "
  "The second core's gain compares sustained deliveries/s (highest passing find-max rate x subscribers; "
  "the rate grid is `FIND_MAX_RATE` x `FIND_MAX_STEP_FACTOR`^k, so ratios of two maxima are powers of the factor). "
  "*before*: the `BEFORE` binary in the same preset, and after/before.")
w("")
w("| target | Herald | compared with | ratio | target | result | before (after/before) |")
w("| --- | ---: | ---: | ---: | --- | --- | ---: |")
for what, runs, hr, rr, rlabel, fig, fmt, check, bound, br in targets:
    hj, rj = load(hr), load(rr)
    hv, rv = fig(hj), fig(rj)
    bj = load(br) if br else None
    bv = fig(bj) if bj else None
    before_cell = "-"
    if bv is not None and hv is not None:
        before_cell = fmt(bv) + (f" ({hv / bv:.2f}x)" if bv else "")
    elif br and bj is None and "before" in servers:
        before_cell = "not run"
    herald_cell = fmt(hv) if hv is not None else f"not run (`{hr}`)" if hj is None else "no figure"
    ref_cell = f"{rlabel} {fmt(rv)}" if rv is not None else f"not run (`{rr}`)" if rj is None else "no figure"
    ratio = hv / rv if hv is not None and rv else None
    ratio_cell = f"{ratio:.2f}x" if ratio is not None else "-"
    notes = []
    if check == "abs":
        bound_cell = f"<= {bound:g} KiB"
        ok = hv is not None and hv <= bound
        known = hv is not None
    else:
        bound_cell = f"{'<=' if check == 'le' else '>='} {bound:g}x"
        known = ratio is not None
        ok = known and (ratio <= bound if check == "le" else ratio >= bound)
    if hr.startswith("fanout10-") and hj is not None:
        loss = hj["deliveries"]["loss"]
        notes.append(f"loss {loss:,}")
        ok = ok and loss == 0
    if hj is not None and not hj["pass"]:
        notes.append("Herald run failed checks")
    if rj is not None and not rj["pass"]:
        notes.append(f"{rlabel} run failed checks")
    result = ("**PASS**" if ok else "**MISS**") if known else "n/a"
    if notes:
        result += " (" + "; ".join(notes) + ")"
    w(f"| {what} (`{runs}`) | {herald_cell} | {ref_cell} | {ratio_cell} | {bound_cell} | {result} | {before_cell} |")
w("")
if any(name.endswith("-before") for name, *_ in cmds):
    w("## Before and after")
    w("")
    w("Each `*-before` run next to the current build's run of the same preset (`*-herald`).")
    w("")
    w("| preset | loss after / before | p99 ms after / before | server CPU µs/delivery after / before | RSS per connection after / before | established in after / before |")
    w("| --- | ---: | ---: | ---: | ---: | ---: |")
    def pair(a, b, f):
        return f"{f(a) if a is not None else '-'} / {f(b) if b is not None else '-'}"
    for name, kind, *_ in cmds:
        if not name.endswith("-before"):
            continue
        bj, aj = load(name), load(name[: -len("-before")] + "-herald")
        if bj is None:
            continue
        idle = bj["run"]["scenario"] == "idle"
        loss = "-" if idle else pair(aj["deliveries"]["loss"] if aj else None, bj["deliveries"]["loss"], lambda v: f"{v:,}")
        w(f"| {name[: -len('-before')]} | {loss} | "
          f"{'-' if idle else pair(p99(aj), p99(bj), ms)} | {'-' if idle else pair(cpu_us(aj), cpu_us(bj), lambda v: f'{v:.1f}')} | "
          f"{pair(kib(aj), kib(bj), lambda v: f'{v:.2f} KiB')} | {pair(establish(aj), establish(bj), lambda v: f'{v:.1f} s')} |")
    w("")
w("## Memory per idle connection")
w("")
w("| run | server | connections | established in | RSS before | RSS connected | per connection |")
w("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
for name, kind, *_ in cmds:
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
for name, kind, *_ in cmds:
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
w("A step passes with no loss, p99 <= 1 s and the publisher keeping up (>= 90 % of the asked rate). "
  "Sustained deliveries/s = max publications/s x subscribers; measured = deliveries over the step's span "
  "(first send to last receipt).")
w("")
w("| run | server | connections | max publications/s | sustained deliveries/s | measured deliveries/s at that rate | p99 ms at that rate | steps |")
w("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for name, kind, *_ in cmds:
    if "max" not in name:
        continue
    j = load(name)
    if not j or "find_max" not in j:
        continue
    fm = j["find_max"]
    best = [s for s in fm["steps"] if s["pass"]]
    b = best[-1] if best else None
    w(f"| {name} | {kind} | {j['connections']['established']:,} | {fm['max_sustained_rate']:.2f} | "
      f"{sustained(j):,.0f} | {(b['deliveries_per_s'] if b else 0):,.0f} | {ms(b['latency_ms']['p99']) if b else '-'} | "
      f"{len(fm['steps'])} |")
w("")
w("## Other checks")
w("")
for name, kind, *_ in cmds:
    j = load(name)
    if not j:
        w(f"- {name}: no result")
        continue
    extra = ""
    if "reconnect_storm" in j:
        rs = j["reconnect_storm"]
        extra = (f"; storm: {rs['resumed']:,} resumed, {rs['resume_failed']:,} failed, over in {rs['storm_s']:.2f} s, "
                 f"resume p99 {ms(rs['resume_ms']['p99'])} ms")
        nc = rs.get("newcomers")
        if nc:
            extra += (f"; {nc['accepted']:,} of {nc['attempted']:,} new subscribers accepted during the storm, "
                      f"p99 {ms(nc['accept_ms']['p99'])} ms, max {ms(nc['accept_ms']['max'])} ms")
    if j["connections"]["slow"]:
        c = j["connections"]
        extra += f"; slow: {c['slow']:,} slow clients, {c['slow_closed_by_server']:,} closed by the server"
    verdict = "pass" if j["pass"] else "FAIL: " + "; ".join(j["problems"])
    w(f"- {name} ({kind}): {verdict}{extra}")
w("")
w("## Plots")
w("")
w("Written by herald-loadtest itself (`--svg`: publish-to-receive latency by percentile; "
  "`--throughput-svg`: deliveries/s, publications/s and open connections every 250 ms, "
  "dashed lines at the storm's drop and at its last resume).")
w("")
rel = os.path.basename(plots)
for name, kind, *_ in cmds:
    pics = [(what, f"{name}-{what}.svg") for what in ("latency", "throughput")
            if os.path.exists(os.path.join(plots, f"{name}-{what}.svg"))]
    if not pics:
        continue
    w(f"### {name}")
    w("")
    w(" ".join(f"![{name}: {what}]({rel}/{fn})" for what, fn in pics))
    w("")
w("## Commands")
w("")
w("Each run: a fresh server, by kind:")
w("")
for kind, (cmd, _) in servers.items():
    w(f"- {kind}: `{cmd}`")
w("")
w("then `[taskset -c " + gen_cpu + "] build/bin/herald-loadtest --target 127.0.0.1:PORT --server-pids PID "
  "--source-addrs 127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4 --quiet --json-file NAME.json "
  f"--svg {rel}/NAME-latency.svg --throughput-svg {rel}/NAME-throughput.svg` plus (generator pinned unless said):")
w("")
w("```")
for name, kind, gen, cmd in cmds:
    w(f"{name:31} {kind:15} {'' if gen else '(generator unpinned) '}{cmd}")
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
