// Cluster mode, steady state: one redis-server, three herald instances
// (REDIS_URL in the environment). On each instance one SSE (curl) and one
// WebSocket (`ws`) subscriber to `stream:c1` and a `user:` channel; 30
// publications round robin across the instances, some naming both channels.
// Every client receives every publication once, each channel's in the same
// order, offsets contiguous from 1 (between the two channels cluster mode
// promises no order: each channel is compared on its own). Also /healthz,
// /readyz, and that an instance SUBSCRIBEs in Redis only to channels it has
// subscribers for. See docs/cluster.md.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { getJson, publishOk, publishOnce } from "../lib/herald.mjs";
import { wsConnect, wsSubscribe } from "../lib/ws.mjs";
import {
  numsub,
  sleep,
  sseItems,
  sseSubscribe,
  suiteCluster,
  userChannel,
  waitUntil,
  wsItems,
  wsSubscribeAll,
} from "./lib.mjs";

const C1 = "stream:c1";
const USER = userChannel(1);
const N = 30;

describe("three instances on one Redis", { timeout: 60_000 }, () => {
  const clients = []; // {name, kind, client}
  const { redis, hs } = suiteCluster(3, {
    via: "env",
    beforeStop: () => Promise.all(clients.map(({ client }) => client.close().catch(() => {}))),
  });

  test("/healthz says cluster, /readyz 200 on every instance", async () => {
    for (const h of hs) {
      const health = await getJson(h.url, "/healthz");
      assert.equal(health.status, 200);
      assert.equal(health.json.mode, "cluster", health.text);
      assert.equal(health.json.status, "ok", health.text);
      const ready = await getJson(h.url, "/readyz");
      assert.equal(ready.status, 200, ready.text);
    }
  });

  test("30 publications round robin reach all 6 clients once, in the same order", async () => {
    for (const [i, h] of hs.entries()) {
      clients.push({ name: `sse@${i}`, kind: "sse", client: await sseSubscribe(h.url, [C1, USER]) });
      clients.push({ name: `ws@${i}`, kind: "ws", client: await wsSubscribeAll(h.url, [C1, USER]) });
    }
    for (const { kind, client } of clients) client.from = kind === "sse" ? 0 : client.inbox.items.length;
    // Every instance watches both channels in Redis.
    assert.equal(await numsub(redis.port, `herald:{${C1}}:pub`), 3);
    assert.equal(await numsub(redis.port, `herald:{${USER}}:pub`), 3);

    const expected = { [C1]: [], [USER]: [] };
    for (let seq = 1; seq <= N; seq++) {
      const h = hs[(seq - 1) % 3];
      const both = seq % 3 === 0;
      const body = both
        ? { channels: [C1, USER], event: "tick", data: { seq } }
        : { channel: C1, event: "tick", data: { seq } };
      const offsets = await publishOk(h.url, body);
      assert.equal(offsets[C1], seq, `publish ${seq} on instance ${(seq - 1) % 3}: ${JSON.stringify(offsets)}`);
      expected[C1].push({ offset: offsets[C1], seq });
      if (both) {
        assert.equal(offsets[USER], seq / 3);
        expected[USER].push({ offset: offsets[USER], seq });
      }
    }
    assert.deepEqual(
      expected[C1].map((x) => x.offset),
      Array.from({ length: N }, (_, i) => i + 1),
    );

    const view = ({ kind, client }, ch) => {
      const items =
        kind === "sse"
          ? sseItems(client.events.items, ch, client.channels)
          : wsItems(client.inbox.items.slice(client.from), ch);
      return items.map((x) => (x.kind === "pub" ? { offset: x.offset, seq: x.data?.seq } : { gap: x.reason }));
    };
    const total = N + N / 3;
    for (const c of clients) {
      const get = () => view(c, C1).length + view(c, USER).length;
      const src = c.kind === "sse" ? c.client.events : c.client.inbox;
      await src.until(() => get() >= total, { timeoutMs: 5000, what: `${c.name}: ${total} publications` });
    }
    // A sentinel on both channels: order is kept per channel, so a duplicate
    // would arrive before it (instead of waiting 300 ms for one).
    // (a fresh connection: a pooled one may have been closed while idle)
    const sent = await publishOnce(hs[0].url, { channels: [C1, USER], event: "tick", data: { seq: "sentinel" } });
    assert.equal(sent.status, 200, sent.text);
    const sentinel = sent.json.offsets;
    for (const ch of [C1, USER]) expected[ch].push({ offset: sentinel[ch], seq: "sentinel" });
    for (const c of clients) {
      const src = c.kind === "sse" ? c.client.events : c.client.inbox;
      await src.until(() => [C1, USER].every((ch) => view(c, ch).some((x) => x.seq === "sentinel")), {
        timeoutMs: 5000,
        what: `${c.name}: the sentinel on both channels`,
      });
    }

    for (const c of clients) {
      for (const ch of [C1, USER]) {
        assert.deepEqual(view(c, ch), expected[ch], `${c.name} on ${ch}`);
      }
      if (c.kind === "sse") {
        // One epoch, shared by every instance.
        const epochs = new Set(sseItems(c.client.events.items, C1, c.client.channels).map((x) => x.epoch));
        assert.equal(epochs.size, 1);
      }
    }
    // Same epoch everywhere (WS: from the subscribed replies; SSE: from the ids).
    const wsEpochs = new Set(clients.filter((c) => c.kind === "ws").map((c) => c.client.subscribed[C1].epoch));
    const sseEpochs = new Set(
      clients.filter((c) => c.kind === "sse").map((c) => sseItems(c.client.events.items, C1, c.client.channels)[0].epoch),
    );
    assert.equal(wsEpochs.size, 1);
    assert.deepEqual(sseEpochs, wsEpochs);

    // Per-event fields: event name, data unchanged.
    for (const c of clients.filter((x) => x.kind === "ws")) {
      const pubs = c.client.inbox.items.slice(c.client.from).filter((m) => m.op === "publication");
      for (const p of pubs) assert.equal(p.event, "tick");
      assert.equal(c.client.inbox.items.slice(c.client.from).filter((m) => m.op === "gap").length, 0);
    }
  });

  test("an instance SUBSCRIBEs in Redis only to channels it has subscribers for", async () => {
    const OTHER = "stream:other";
    const key = `herald:{${OTHER}}:pub`;
    assert.equal(await numsub(redis.port, key), 0);
    const c = await wsConnect(hs[1].url);
    try {
      const r = await wsSubscribe(c, OTHER);
      assert.equal(r.op, "subscribed");
      // `subscribed` comes after the instance's SUBSCRIBE was confirmed.
      assert.equal(await numsub(redis.port, key), 1);
      await sleep(300);
      assert.equal(await numsub(redis.port, key), 1, "the other instances stay off the channel");
      // A publication through an instance without subscribers still reaches it.
      const from = c.inbox.items.length;
      await publishOk(hs[2].url, { channel: OTHER, event: "x", data: { n: 1 } });
      await c.inbox.until((items) => items.slice(from).some((m) => m.op === "publication" && m.data?.n === 1), {
        what: "publication on stream:other",
      });
      assert.equal(await numsub(redis.port, key), 1);
    } finally {
      await c.close();
    }
    const t0 = Date.now();
    await waitUntil(async () => (await numsub(redis.port, key)) === 0, {
      timeoutMs: 1500,
      intervalMs: 50,
      what: `NUMSUB ${key} = 0 after the only subscriber left`,
    });
    const took = Date.now() - t0;
    assert.ok(took <= 1200, `UNSUBSCRIBE took ${took} ms`);
    // The instances that still have subscribers keep their subscriptions.
    assert.equal(await numsub(redis.port, `herald:{${C1}}:pub`), 3);
  });
});
