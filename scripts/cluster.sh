#!/usr/bin/env bash
# A local three-instance cluster without Docker, from Debian's packages:
# redis-server, three herald instances sharing it, and HAProxy in front with
# docker/haproxy.cfg (round robin, health checks on /readyz).
#
#   ./scripts/cluster.sh start   # builds if needed; HAProxy on 127.0.0.1:8090
#   ./scripts/cluster.sh start --redis-cluster   # a Redis Cluster instead of one Redis
#   ./scripts/cluster.sh status
#   ./scripts/cluster.sh stop    # stops what start started, by PID
#
# --redis-cluster: 3 masters with 1 replica each (redis-server --cluster-enabled
# yes, joined by redis-cli --cluster create), the instances given
# --redis-url=redis+cluster://<first two nodes> (docs/cluster.md, "Redis Cluster").
#
# Ports: REDIS_PORT (6390), HERALD_PORTS ("8091 8092 8093"), LB_PORT (8090);
# with --redis-cluster REDIS_CLUSTER_PORTS ("7001 7002 7003 7004 7005 7006"),
# each node's cluster bus on its port + 10000.
# State (PID files, logs) lives in build/cluster/.
# Development only: the instances run with --insecure (no tokens, no API key;
# docs/auth.md) on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
run="$(pwd)/build/cluster" # absolute: redis-server resolves --logfile after --dir
redis_port="${REDIS_PORT:-6390}"
read -r -a cluster_ports <<<"${REDIS_CLUSTER_PORTS:-7001 7002 7003 7004 7005 7006}"
read -r -a herald_ports <<<"${HERALD_PORTS:-8091 8092 8093}"
lb_port="${LB_PORT:-8090}"

stop_pidfile() {
  local f=$1
  [ -f "$f" ] || return 0
  local pid
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

wait_http() {
  for _ in $(seq 1 100); do
    curl -fs "$1" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "cluster: $1 did not answer" >&2
  return 1
}

case "${1:-}" in
  start)
    ./scripts/install-deps.sh --cluster
    [ -x build/bin/herald ] || ./scripts/build.sh -DHERALD_BUILD_TESTS=OFF
    mkdir -p "$run"
    if [ "${2:-}" = "--redis-cluster" ]; then
      rm -f "$run"/nodes-*.conf
      nodes=()
      for p in "${cluster_ports[@]}"; do
        # Each node its own, empty --dir: a replica's full sync writes
        # dump.rdb even with --save '', and a node that loaded another's
        # (or an old) dump would refuse to join ("Node ... is not empty").
        rm -rf "$run/redis-$p"
        mkdir -p "$run/redis-$p"
        redis-server --bind 127.0.0.1 --port "$p" --save '' --appendonly no --dir "$run/redis-$p" \
          --logfile "$run/redis-$p.log" --daemonize no --cluster-enabled yes \
          --cluster-config-file "$run/nodes-$p.conf" --cluster-node-timeout 1000 >/dev/null 2>&1 &
        echo $! >"$run/redis-$p.pid"
        nodes+=("127.0.0.1:$p")
      done
      for p in "${cluster_ports[@]}"; do
        for _ in $(seq 1 50); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
      done
      redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes >"$run/cluster-create.log" 2>&1 \
        || { cat "$run/cluster-create.log" >&2; "$0" stop; exit 1; }
      for p in "${cluster_ports[@]}"; do
        for _ in $(seq 1 100); do
          redis-cli -p "$p" cluster info 2>/dev/null | grep -q cluster_state:ok && break
          sleep 0.1
        done
      done
      redis_url="redis+cluster://${nodes[0]},${nodes[1]}"
    else
      redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
        --dir "$run" --logfile "$run/redis.log" --daemonize no >/dev/null 2>&1 &
      echo $! >"$run/redis.pid"
      redis_url="redis://127.0.0.1:$redis_port"
    fi
    for i in 0 1 2; do
      REDIS_URL="$redis_url" ./build/bin/herald --host=127.0.0.1 --insecure \
        --port="${herald_ports[$i]}" >"$run/herald$((i + 1)).log" 2>&1 &
      echo $! >"$run/herald$((i + 1)).pid"
    done
    for p in "${herald_ports[@]}"; do
      wait_http "http://127.0.0.1:$p/readyz" || { "$0" stop; exit 1; }
    done
    LISTEN="127.0.0.1:$lb_port" HERALD_1="127.0.0.1:${herald_ports[0]}" \
      HERALD_2="127.0.0.1:${herald_ports[1]}" HERALD_3="127.0.0.1:${herald_ports[2]}" \
      haproxy -f docker/haproxy.cfg -db >"$run/haproxy.log" 2>&1 &
    echo $! >"$run/haproxy.pid"
    wait_http "http://127.0.0.1:$lb_port/healthz" || { "$0" stop; exit 1; }
    cat <<EOT
cluster up: HAProxy http://127.0.0.1:$lb_port -> herald on ${herald_ports[*]}, Redis: $redis_url
  subscribe: curl -N "http://127.0.0.1:$lb_port/v1/sse?channel=stream:42"
  publish:   curl -X POST http://127.0.0.1:${herald_ports[0]}/v1/publish -d '{"channel":"stream:42","event":"e","data":1}'
  stop:      ./scripts/cluster.sh stop
EOT
    ;;
  stop)
    stop_pidfile "$run/haproxy.pid"
    for i in 1 2 3; do stop_pidfile "$run/herald$i.pid"; done
    stop_pidfile "$run/redis.pid"
    for f in "$run"/redis-*.pid; do stop_pidfile "$f"; done
    rm -f "$run"/nodes-*.conf
    rm -rf "$run"/redis-[0-9]*/
    echo "cluster stopped"
    ;;
  status)
    for f in "$run"/*.pid; do
      [ -f "$f" ] || continue
      if kill -0 "$(cat "$f")" 2>/dev/null; then s=up; else s=down; fi
      echo "$(basename "$f" .pid): pid $(cat "$f") $s"
    done
    for p in "${herald_ports[@]}"; do
      echo "herald :$p /readyz -> $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$p/readyz")"
    done
    ;;
  *)
    echo "usage: $0 start [--redis-cluster]|stop|status" >&2
    exit 2
    ;;
esac
