#!/bin/sh
# One-shot service of docker/compose.redis-cluster.yml: waits for the six
# Redis nodes, joins them into a Redis Cluster of 3 masters with 1 replica
# each (redis-cli --cluster create, by IP address: what the nodes announce
# and Herald connects to), and waits for cluster_state:ok on every node. A
# cluster that exists already (the nodes kept their nodes.conf) is left as
# it is. Exits 0 when the cluster serves every slot.
set -eu
nodes="${REDIS_NODES:-redis1 redis2 redis3 redis4 redis5 redis6}"
addrs=""
for n in $nodes; do
  tries=0
  until redis-cli -h "$n" -p 6379 ping 2>/dev/null | grep -q PONG; do
    tries=$((tries + 1))
    [ "$tries" -lt 60 ] || { echo "redis node $n does not answer" >&2; exit 1; }
    sleep 1
  done
  addrs="$addrs $(getent hosts "$n" | cut -d' ' -f1):6379"
done
first=${nodes%% *}
if redis-cli -h "$first" -p 6379 cluster info | grep -q '^cluster_state:ok'; then
  echo "Redis Cluster already created"
else
  # shellcheck disable=SC2086
  redis-cli --cluster create $addrs --cluster-replicas 1 --cluster-yes
fi
for n in $nodes; do
  tries=0
  until redis-cli -h "$n" -p 6379 cluster info | grep -q '^cluster_state:ok'; do
    tries=$((tries + 1))
    [ "$tries" -lt 60 ] || { echo "node $n: cluster_state is not ok" >&2; exit 1; }
    sleep 1
  done
done
redis-cli -h "$first" -p 6379 cluster nodes
echo "Redis Cluster ready:$addrs"
