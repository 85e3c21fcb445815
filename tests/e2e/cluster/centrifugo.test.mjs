// Cluster mode behind HAProxy with the real `centrifuge` SDK: Redis, three
// herald instances, HAProxy (docker/haproxy.cfg). The SDK connects through
// HAProxy to /connection/websocket and subscribes; publications go through
// Centrifugo's /api/publish on another instance. The instance the SDK is on
// is SIGKILLed while publishing continues: the SDK reconnects through HAProxy
// to another instance, its `subscribed` event says recovered (Redis holds the
// history and the epoch for every instance), and every publication arrives
// once, in order. The getState flow behind HAProxy: /api/publish answers the
// epoch, and every instance (with or without a subscriber of the channel)
// answers the channel's position from Redis through /api/history and
// GET /v1/channels/{name}, from which the SDK subscribes with no gap. A live
// epoch change (Redis lost the channel): the SDK's resubscribe reply carries
// the new epoch's publications, marked not recovered. Every scenario runs on
// both builds of the SDK: JSON (`centrifuge`) and Protobuf
// (`centrifuge/build/protobuf`, whose publication data is the JSON text as
// bytes). Delta compression behind HAProxy: every instance makes the deltas
// from its copy of the history, and the SDK decodes them. See
// docs/centrifugo.md and docs/cluster.md.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import WebSocket from "ws";

import { api, ENCODINGS, pubData } from "../lib/centrifuge.mjs";
import { getJson } from "../lib/herald.mjs";
import { killHerald, redisCli, sleep, suiteCluster, waitUntil } from "./lib.mjs";

const CHANNEL = "stream:cf-cluster";


/** Publishes `{n}` to `channel` through `h`'s /api/publish (event "n"); returns the result. */
const apiPublish = (h, n, channel = CHANNEL) => api(h.url, "publish", { channel, data: { n }, tags: { event: "n" } });

/**
 * A client of the SDK build `Sdk` through HAProxy subscribed to `channel`;
 * records publications (data decoded, as the JSON build gives it) and
 * `subscribed` events.
 */
function sdkSubscribed(Sdk, lb, channel, subOpts = {}) {
  const c = new Sdk(`${lb.url.replace("http", "ws")}/connection/websocket`, {
    websocket: WebSocket,
    minReconnectDelay: 100,
    maxReconnectDelay: 500,
    timeout: 3000,
  });
  const sub = c.newSubscription(channel, subOpts);
  const pubs = [];
  const subscribed = [];
  sub.on("publication", (ctx) => pubs.push({ ...ctx, data: pubData(ctx) }));
  sub.on("subscribed", (ctx) => subscribed.push(ctx));
  sub.subscribe();
  c.connect();
  return { c, sub, pubs, subscribed };
}

/** `channel`'s position and last `limit` publications through `h`'s /api/history: the result. */
const apiHistory = (h, channel, limit) => api(h.url, "history", { channel, limit });

for (const [enc, Sdk] of ENCODINGS) {
  describe(`centrifuge SDK (${enc}) through HAProxy, losing its instance`, { timeout: 90_000 }, () => {
    const { hs, lb } = suiteCluster(3, { via: "flag", haproxy: true });

    test("the SDK reconnects elsewhere and recovers every missed publication once, in order", async () => {
      const { c, pubs, subscribed } = sdkSubscribed(Sdk, lb, CHANNEL);
      try {
        await waitUntil(() => subscribed.length === 1, { what: "subscribed", timeoutMs: 8000 });
        // The instance the SDK is on: the one with a client.
        const counts = await Promise.all(hs.map(async (h) => (await getJson(h.url, "/healthz")).json.connections));
        const a = counts.indexOf(1);
        assert.ok(a >= 0, `one instance holds the SDK: ${counts}`);
        const others = hs.filter((_, i) => i !== a);
        let n = 0;
        for (; n < 5; ) {
          n++;
          const r = await apiPublish(others[n % 2], n);
          assert.equal(r.offset, n);
        }
        await waitUntil(() => pubs.length === 5, { what: "5 publications", timeoutMs: 8000 });

        await killHerald(hs[a]);
        // Published while the SDK is away (HAProxy needs up to 2 s to see the loss).
        for (let i = 0; i < 10; i++) {
          n++;
          await apiPublish(others[n % 2], n);
          await sleep(100);
        }
        await waitUntil(() => subscribed.length === 2, { what: "subscribed again", timeoutMs: 15_000 });
        assert.equal(subscribed[1].wasRecovering, true);
        assert.equal(subscribed[1].recovered, true, JSON.stringify(subscribed[1]));
        for (let i = 0; i < 5; i++) {
          n++;
          await apiPublish(others[n % 2], n);
        }
        await waitUntil(() => pubs.length >= 20, { what: "20 publications", timeoutMs: 8000 });
        await sleep(200);
        assert.deepEqual(pubs.map((p) => p.data.n), [...Array(20).keys()].map((i) => i + 1));
        assert.deepEqual(pubs.map((p) => p.offset), [...Array(20).keys()].map((i) => i + 1));
      } finally {
        c.disconnect();
      }
    });

    test("getState behind HAProxy: positions come from Redis on every instance, the SDK subscribes from one with no gap", async () => {
      const ch = "stream:cf-cluster-state";
      // The instances still running (the test above killed one): two, each
      // answering for itself, the SDK on either through HAProxy.
      const live = [];
      for (const h of hs) if (await getJson(h.url, "/healthz").then(() => true, () => false)) live.push(h);
      assert.equal(live.length, 2);
      // A channel no instance has a subscriber of: nothing mirrors it locally.
      const fresh = await apiHistory(live[1], "stream:cf-cluster-none", 0);
      assert.equal(fresh.offset, 0);
      assert.ok(fresh.epoch, `a fresh channel gets an epoch: ${JSON.stringify(fresh)}`);
      assert.equal((await apiHistory(live[1], "stream:cf-cluster-none", 0)).epoch, fresh.epoch,
        "every instance reads the same epoch");

      const acks = [];
      for (let n = 1; n <= 3; n++) acks.push(await apiPublish(live[0], n, ch));
      assert.deepEqual(acks.map((a) => a.offset), [1, 2, 3]);
      assert.ok(acks[0].epoch, `/api/publish answers the epoch in cluster mode: ${JSON.stringify(acks[0])}`);
      assert.ok(acks.every((a) => a.epoch === acks[0].epoch));
      const epoch = acks[0].epoch;

      for (const h of live) {
        const pos = await apiHistory(h, ch, 0);
        assert.deepEqual([pos.epoch, pos.offset, pos.publications ?? []], [epoch, 3, []]);
        const chan = await getJson(h.url, `/v1/channels/${ch}`);
        assert.equal(chan.status, 200, JSON.stringify(chan.json));
        assert.deepEqual([chan.json.epoch, chan.json.offset], [epoch, 3]);
      }
      const latest = await apiHistory(live[1], ch, 2);
      assert.deepEqual(latest.publications.map((p) => [p.offset, p.data.n]), [[2, 2], [3, 3]]);

      // The app loaded its state at offset 3 (getState answers it after a
      // first unrecoverable guess gets 112); two more arrive before it subscribes.
      for (let n = 4; n <= 5; n++) await apiPublish(live[1], n, ch);
      const calls = [];
      const { c, pubs, subscribed } = sdkSubscribed(Sdk, lb, ch, {
        getState: async () => {
          calls.push(1);
          if (calls.length === 1) return { offset: 1, epoch: "nosuchepoch" };
          return { offset: 3, epoch };
        },
      });
      try {
        await waitUntil(() => subscribed.length === 1, { what: "subscribed", timeoutMs: 8000 });
        assert.equal(calls.length, 2, "getState again after 112");
        assert.equal(subscribed[0].recovered, true, JSON.stringify(subscribed[0]));
        await apiPublish(live[1], 6, ch);
        await waitUntil(() => pubs.length >= 3, { what: "3 publications", timeoutMs: 8000 });
        await sleep(200);
        assert.deepEqual(pubs.map((p) => [p.offset, p.data.n]), [[4, 4], [5, 5], [6, 6]]);
      } finally {
        c.disconnect();
      }
    });

    test("delta: 'fossil' behind HAProxy: publications made on the other instance arrive as deltas and decode as published", async () => {
      const ch = `stream:cf-cluster-delta-${enc}`;
      const live = [];
      for (const h of hs) if (await getJson(h.url, "/healthz").then(() => true, () => false)) live.push(h);
      const { c, sub, pubs, subscribed } = sdkSubscribed(Sdk, lb, ch, { delta: "fossil" });
      // A ~1.5 KiB state; each publication changes one field.
      const state = (n) => ({ n, rows: [...Array(24).keys()].map((k) => ({ k, v: k === n % 24 ? n : 0, memo: "payment stream" })) });
      try {
        await waitUntil(() => subscribed.length === 1, { what: "subscribed", timeoutMs: 8000 });
        const sent = [];
        for (let n = 1; n <= 20; n++) {
          sent.push(state(n));
          // Alternately through both instances: the SDK's instance gets them from Redis or itself.
          await api(live[n % live.length].url, "publish", { channel: ch, data: state(n), tags: { event: "state" } });
        }
        await waitUntil(() => pubs.length >= 20, { what: "20 publications", timeoutMs: 8000 });
        await sleep(100);
        assert.deepEqual(pubs.map((p) => p.data), sent);
        const stats = sub.deltaStats();
        assert.equal(stats.numFullPayloads, 1, JSON.stringify(stats));
        assert.equal(stats.numDeltaPayloads, 19);
      } finally {
        c.disconnect();
      }
    });
  });

  describe(`centrifuge SDK (${enc}) across a live epoch change`, { timeout: 60_000 }, () => {
    const { redis, hs } = suiteCluster(1, { via: "flag" });

    test("the new epoch's first publications reach the SDK in the resubscribe reply, marked not recovered", async () => {
      // Redis loses the channel (as after --history-ttl) while the SDK is
      // subscribed: the next publication starts a new epoch, the SDK gets the
      // live gap (unsubscribe push 2500) and subscribes again from its old
      // position. Was: `recovered: false` and nothing more, so the new epoch's
      // first publication never reached it.
      const ch = "stream:cf-epoch";
      const { c, pubs, subscribed } = sdkSubscribed(Sdk, { url: hs[0].url }, ch);
      try {
        await waitUntil(() => subscribed.length === 1, { what: "subscribed", timeoutMs: 8000 });
        const first = await apiPublish(hs[0], 1, ch);
        await apiPublish(hs[0], 2, ch);
        await waitUntil(() => pubs.length === 2, { what: "2 publications", timeoutMs: 8000 });
        await redisCli(redis.port, "DEL", `herald:{${ch}}:meta`, `herald:{${ch}}:history`);
        const next = await apiPublish(hs[0], 3, ch);
        assert.equal(next.offset, 1, "a new epoch");
        assert.notEqual(next.epoch, first.epoch);
        await waitUntil(() => subscribed.length === 2, { what: "subscribed again after the gap", timeoutMs: 8000 });
        assert.equal(subscribed[1].wasRecovering, true, JSON.stringify(subscribed[1]));
        assert.equal(subscribed[1].recovered, false, JSON.stringify(subscribed[1]));
        assert.equal(subscribed[1].streamPosition.epoch, next.epoch);
        await apiPublish(hs[0], 4, ch);
        await waitUntil(() => pubs.some((p) => p.data.n === 4), { what: "the publication after the resubscribe", timeoutMs: 8000 });
        assert.deepEqual(pubs.map((p) => [p.data.n, p.offset]), [[1, 1], [2, 2], [3, 1], [4, 2]]);
      } finally {
        c.disconnect();
      }
    });
  });
}
