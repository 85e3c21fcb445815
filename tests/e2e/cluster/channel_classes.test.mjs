// Channel classes in cluster mode (docs/cluster.md, docs/protocol.md
// "Channel classes"), on one Redis and on a 3-master Redis Cluster: a class's
// history size is the length Redis keeps (the publish script's MAXLEN), and
// cache recovery works after the instance that had the channel is gone: the
// real `centrifuge` SDK (JSON and Protobuf builds), away while 20
// publications trimmed its position, comes back through a proxy to another
// instance and gets exactly the latest publication, recovered, no error 112,
// no gap; a first subscribe there gets the latest value first, and a
// filtered one the newest value its filter matches in Redis's history. The version
// guard (docs/protocol.md "Versioned publishing") is atomic in the publish
// script: 2,000 publications replayed after the idempotency window, through
// both instances, are all suppressed, nothing stored or delivered, offsets
// unchanged.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { ENCODINGS, assertCacheRecovery, subscribedClient, withProxiedSubscriber } from "../lib/centrifuge.mjs";
import { publishOk, startHerald } from "../lib/herald.mjs";
import { replayIsSuppressed } from "../lib/versions.mjs";
import { publicationsOf, wsConnect, wsSubscribe } from "../lib/ws.mjs";
import { freePort, killHerald, redisCli, startRedis, startRedisCluster, waitReady, waitUntil } from "./lib.mjs";

const CLASSES = "stream:cc-* history-size=1 recovery=cache; stream:cf-* history-size=10 recovery=cache";
const waitFor = (fn, what, timeoutMs = 10_000) => waitUntil(fn, { what, timeoutMs });

async function publishRange(url, channel, from, to) {
  for (let n = from; n < to; n++) await publishOk(url, { channel, event: "state", data: { n } });
}

for (const mode of ["one Redis", "a Redis Cluster"]) {
  describe(`channel classes on ${mode}`, { timeout: 120_000 }, () => {
    let redis;
    const instances = [];
    const start = async () => {
      const h = await startHerald([`--redis-url=${redis.url}`, `--channel-classes=${CLASSES}`, "--history-size=50", "--idempotency-window=1"]);
      await waitReady(h.url);
      instances.push(h);
      return h;
    };
    // redis-cli on the Redis, or (-c: following MOVED) on a node of the Redis Cluster.
    const cli = (...args) => (mode === "one Redis" ? redisCli(redis.port, ...args) : redisCli(redis.nodes[0].port, "-c", ...args));

    before(async () => {
      redis = mode === "one Redis" ? await startRedis() : await startRedisCluster({ masters: 3, replicas: 0 });
    }, { timeout: 60_000 });
    after(async () => {
      await Promise.all(instances.map((h) => h.stop().catch(() => {})));
      await (redis?.stop ? redis.stop() : redis?.kill("SIGKILL"));
    }, { timeout: 20_000 });

    test("Redis keeps a class's own history length", async () => {
      const h = await start();
      await publishRange(h.url, "stream:cc-len", 1, 6);
      await publishRange(h.url, "stream:other-len", 1, 6);
      const len = async (ch) => Number((await cli("XLEN", `herald:{${ch}}:history`))[0]);
      assert.equal(await len("stream:cc-len"), 1);
      assert.equal(await len("stream:other-len"), 5);
    });

    test("/v1/ws with a filter on a fresh instance: the cached value is the newest publication in Redis's history it matches", async () => {
      const channel = "stream:cf-ws";
      const a = await start();
      for (let n = 1; n < 7; n++) {
        const asset = n % 2 ? "USDC" : "EUR"; // USDC 1, 3, 5; the latest (6) is EUR
        await publishOk(a.url, { channel, event: "balance", tags: { asset }, data: { n } });
      }
      const b = await start(); // its channel starts from Redis
      const ws = await wsConnect(b.url);
      try {
        const reply = await ws.request({ op: "subscribe", channel, filter: { key: "asset", cmp: "eq", val: "USDC" } });
        assert.equal(reply.cache, true);
        assert.equal(reply.offset, 6);
        await waitFor(() => publicationsOf(ws, channel).length >= 1, "the newest USDC value");
        await publishOk(a.url, { channel, event: "balance", tags: { asset: "USDC" }, data: { n: 7 } });
        await waitFor(() => publicationsOf(ws, channel).length >= 2, "the live one through Redis");
        assert.deepEqual(publicationsOf(ws, channel).map((p) => [p.offset, p.data.n]), [[5, 5], [7, 7]]);
        assert.equal(ws.inbox.items.filter((m) => m.op === "gap").length, 0);
      } finally {
        await ws.close();
      }
    });

    test("2,000 publications replayed after the idempotency window through two instances: all suppressed, nothing stored or delivered", async () => {
      const channel = "stream:versions-cluster";
      const a = await start();
      const b = await start();
      const ws = await wsConnect(b.url);
      try {
        await wsSubscribe(ws, channel);
        await replayIsSuppressed({
          publishUrls: [a.url, b.url],
          channel,
          n: 2000,
          windowMs: 1000,
          delivered: () => publicationsOf(ws, channel).length,
        });
        const len = Number((await cli("XLEN", `herald:{${channel}}:history`))[0]);
        assert.equal(len, 50, "the history holds only what was stored (trimmed to 50)");
        const version = await cli("HGET", `herald:{${channel}}:meta`, "version");
        assert.deepEqual(version, ["2001"]);
      } finally {
        await ws.close();
      }
    });

    for (const [enc, Sdk] of ENCODINGS) {
      test(`SDK (${enc}): its instance killed and 20 publications later, another instance gives exactly the latest, recovered`, async () => {
        const channel = `stream:cc-away-${enc}`;
        const a = await start();
        const b = await start();
        await withProxiedSubscriber(Sdk, a.port, channel, { since: {} }, async ({ sub, proxy }) => {
          await assertCacheRecovery(sub, {
            publish: (n) => publishOk(b.url, { channel, event: "state", data: { n } }),
            leave: async () => {
              proxy.retarget(await freePort()); // away: nowhere to reconnect to
              await killHerald(a);
            },
            back: () => proxy.retarget(b.port),
          });
          // A first subscribe on an instance that never had the channel: the latest value first.
          const fresh = await start();
          const { c: c2, sub: sub2 } = subscribedClient(Sdk, fresh.port, channel, { since: {} });
          try {
            await waitFor(() => sub2.pubs.length >= 1, "the latest value on a fresh instance");
            assert.deepEqual(sub2.pubs.map((p) => p.data.n), [24]);
          } finally {
            c2.disconnect();
          }
        });
      });
    }
  });
}
