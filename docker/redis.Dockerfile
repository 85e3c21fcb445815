# redis-server and redis-cli from Debian 12's packages, for
# docker/compose.redis-cluster.yml (no image from a registry: debian:12 may be
# a local image made with debootstrap and `docker import`, see docs/cluster.md).
FROM debian:12
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      redis-server redis-tools && rm -rf /var/lib/apt/lists/* \
 && mkdir /data && chown redis:redis /data
WORKDIR /data
USER redis
EXPOSE 6379 16379
ENTRYPOINT ["redis-server"]
