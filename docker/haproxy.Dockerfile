# HAProxy from Debian 12's package, for docker/compose.redis-cluster.yml;
# the configuration (docker/haproxy.cfg) is mounted, its addresses come from
# the environment (LISTEN, HERALD_1..3).
FROM debian:12
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      haproxy && rm -rf /var/lib/apt/lists/*
USER haproxy
ENTRYPOINT ["haproxy", "-W", "-db", "-f", "/etc/haproxy/herald.cfg"]
