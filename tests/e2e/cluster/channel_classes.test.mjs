// Channel classes in cluster mode (docs/cluster.md, docs/protocol.md
// "Channel classes"), on one Redis and on a 3-master Redis Cluster: a class's
// history size is the length Redis keeps (the publish script's MAXLEN), and
// cache recovery works after the instance that had the channel is gone: the
// real `centrifuge` SDK (JSON and Protobuf builds), away while 20
// publications trimmed its position, comes back through a proxy to another
// instance and gets exactly the latest publication, recovered, no error 112,
// no gap; a first subscribe there gets the latest value first.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { ENCODINGS, sdkClient, subscription } from "../lib/centrifuge.mjs";
import { publishOk, startHerald } from "../lib/herald.mjs";
import { startProxy } from "../lib/proxy.mjs";
import { freePort, killHerald, redisCli, sleep, startRedis, startRedisCluster, waitReady, waitUntil } from "./lib.mjs";

const CLASSES = "stream:cc-* history-size=1 recovery=cache";
const waitFor = (fn, what, timeoutMs = 10_000) => waitUntil(fn, { what, timeoutMs });

async function publishRange(url, channel, from, to) {
  for (let n = from; n < to; n++) await publishOk(url, { channel, event: "state", data: { n } });
}

for (const mode of ["one Redis", "a Redis Cluster"]) {
  describe(`channel classes on ${mode}`, { timeout: 120_000 }, () => {
    let redis;
    const instances = [];
    const start = async () => {
      const h = await startHerald([`--redis-url=${redis.url}`, `--channel-classes=${CLASSES}`, "--history-size=50"]);
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

    for (const [enc, Sdk] of ENCODINGS) {
      test(`SDK (${enc}): its instance killed and 20 publications later, another instance gives exactly the latest, recovered`, async () => {
        const channel = `stream:cc-away-${enc}`;
        const a = await start();
        const b = await start();
        const proxy = await startProxy(a.port);
        const c = sdkClient(Sdk, proxy.port);
        const sub = subscription(c, channel, { since: {} });
        sub.subscribe();
        c.connect();
        try {
          await waitFor(() => sub.state === "subscribed", "subscribed on the first instance");
          await publishRange(b.url, channel, 1, 4);
          await waitFor(() => sub.pubs.length >= 3, "three live");
          proxy.retarget(await freePort()); // away: nowhere to reconnect to
          await killHerald(a);
          await waitFor(() => sub.state === "subscribing", "the loss seen");
          await publishRange(b.url, channel, 4, 24);
          proxy.retarget(b.port);
          await waitFor(() => sub.events.filter((e) => e.name === "subscribed").length === 2, "subscribed on the second");
          await waitFor(() => sub.pubs.length >= 4, "the latest value");
          await publishRange(b.url, channel, 24, 25);
          await waitFor(() => sub.pubs.length >= 5, "live after it");
          await sleep(100);
          assert.deepEqual(sub.pubs.map((p) => p.data.n), [1, 2, 3, 23, 24]);
          const again = sub.events.filter((e) => e.name === "subscribed")[1].ctx;
          assert.equal(again.wasRecovering, true);
          assert.equal(again.recovered, true);
          assert.deepEqual(sub.events.filter((e) => e.name === "error" || e.name === "unsubscribed"), []);
          // A first subscribe on an instance that never had the channel: the latest value first.
          const fresh = await start();
          const c2 = sdkClient(Sdk, fresh.port);
          const sub2 = subscription(c2, channel, { since: {} });
          sub2.subscribe();
          c2.connect();
          try {
            await waitFor(() => sub2.pubs.length >= 1, "the latest value on a fresh instance");
            assert.deepEqual(sub2.pubs.map((p) => p.data.n), [24]);
          } finally {
            c2.disconnect();
          }
        } finally {
          c.disconnect();
          await proxy.close();
        }
      });
    }
  });
}
