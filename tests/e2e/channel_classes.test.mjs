// Channel classes (--channel-classes, docs/protocol.md "Channel classes"):
// a class's own history size, cache recovery (the latest publication instead
// of a gap) and a class that refuses delta compression, with real clients:
// the `centrifuge` SDK on both of its builds (JSON and Protobuf), `ws` on
// /v1/ws and the `eventsource` package on SSE. Cache recovery: a client away
// while its position left the history (history-size=1, 20 publications
// later) comes back to exactly the latest publication, `recovered` and no
// error 112, no gap; a first subscribe gets the latest value first; with a
// filter (the SDK's tagsFilter, /v1/ws `filter`, SSE `?event=`) the cached
// value is the newest publication the filter matches. Bad class settings stop
// start-up with the option named.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, describe, test } from "node:test";

import { ENCODINGS, assertCacheRecovery, subscribedClient, withProxiedSubscriber } from "./lib/centrifuge.mjs";
import { eventSourceClient } from "./lib/eventsource.mjs";
import { HERALD_BIN, awaitBackgroundStops, getJson, makeCursor, publishOk, sleep, suiteHerald, waitUntil } from "./lib/herald.mjs";
import { freePort } from "./lib/processes.mjs";
import { publicationsOf, withWs, wsConnect, wsSubscribe } from "./lib/ws.mjs";

after(awaitBackgroundStops);

const waitFor = (fn, what, timeoutMs = 8000) => waitUntil(fn, { what, timeoutMs });

const CLASSES = [
  "stream:cache-* history-size=1 recovery=cache",
  "stream:latest-* history-size=10 recovery=cache",
  "stream:short-* history-size=2",
  "stream:plain-* delta=refused",
].join("; ");

/** Publishes {n} for n in [from, to) to `channel`; returns the channel's position. */
async function publishRange(url, channel, from, to) {
  for (let n = from; n < to; n++) await publishOk(url, { channel, event: "state", data: { n } });
  return (await getJson(url, `/v1/channels/${encodeURIComponent(channel)}`)).json;
}

// A wallet's USDC balance on a channel that carries every asset's: the
// cached value a USDC screen needs is the newest USDC one, not the latest.
const USDC = { key: "asset", cmp: "eq", val: "USDC" };

/** Publishes balances n = from .. to - 1 to `channel`, odd n in USDC, even n in EUR. */
async function publishBalances(url, channel, from, to) {
  for (let n = from; n < to; n++) {
    const asset = n % 2 ? "USDC" : "EUR";
    await publishOk(url, { channel, event: asset === "USDC" ? "usdc" : "eur", tags: { asset }, data: { n } });
  }
}

/**
 * SSE's cache answer, then live: `inbox` gets one event (the cached value),
 * then `publishLive()` publishes and one more arrives; their [type, data.n]
 * are `expected` and the first one's id is `firstId` (no herald.gap). Closes `es`.
 */
async function cachedThenLive({ es, inbox }, publishLive, expected, firstId) {
  try {
    await inbox.until((items) => items.length >= 1, { what: "the cached event" });
    await publishLive();
    await inbox.until((items) => items.length >= 2, { what: "live" });
    await sleep(100);
    assert.deepEqual(inbox.items.map((e) => [e.type, JSON.parse(e.data).n]), expected);
    assert.equal(inbox.items[0].lastEventId, firstId);
  } finally {
    es.close();
  }
}

/**
 * Waits until the `/v1/ws` client has `expected.length` publications of
 * `channel`, then checks them, each mapped by `pick`, equal to `expected`
 * (nothing more after 100 ms) and that no gap came.
 */
async function receivedExactly(client, channel, pick, expected) {
  await client.inbox.until(() => publicationsOf(client, channel).length >= expected.length, {
    what: `${expected.length} publication(s) of ${channel}`,
  });
  await sleep(100);
  assert.deepEqual(publicationsOf(client, channel).map(pick), expected);
  assert.equal(client.inbox.items.filter((m) => m.op === "gap").length, 0);
}

describe("channel classes", () => {
  const h = suiteHerald([`--channel-classes=${CLASSES}`, "--history-size=100"]);

  for (const [enc, Sdk] of ENCODINGS) {
    test(`SDK (${enc}): a cache channel gives a first subscribe with since: {} the latest value, then live`, async () => {
      const channel = `stream:cache-first-${enc}`;
      await publishRange(h.url, channel, 1, 6);
      const { c, sub } = subscribedClient(Sdk, h.port, channel, { since: {} });
      try {
        await waitFor(() => sub.pubs.length >= 1, "the latest value");
        const subscribed = sub.events.filter((e) => e.name === "subscribed");
        assert.equal(subscribed.length, 1);
        assert.equal(subscribed[0].ctx.wasRecovering, true);
        assert.equal(subscribed[0].ctx.recovered, true);
        await publishRange(h.url, channel, 6, 8);
        await waitFor(() => sub.pubs.length >= 3, "two live ones");
        await sleep(100);
        assert.deepEqual(sub.pubs.map((p) => p.data.n), [5, 6, 7]);
        assert.equal(sub.events.filter((e) => e.name === "error").length, 0);
      } finally {
        c.disconnect();
      }
    });

    test(`SDK (${enc}): away while 20 publications trimmed its position, it comes back to exactly the latest, recovered, no 112, no gap`, async () => {
      const channel = `stream:cache-away-${enc}`;
      await withProxiedSubscriber(Sdk, h.port, channel, { since: {} }, async ({ sub, proxy }) => {
        await assertCacheRecovery(sub, {
          publish: (n) => publishOk(h.url, { channel, event: "state", data: { n } }),
          // Away: the proxy leads nowhere until the 20 publications are made.
          leave: async () => {
            proxy.retarget(await freePort());
            proxy.drop();
          },
          back: () => proxy.retarget(h.port),
        });
      });
    });

    test(`SDK (${enc}): with a tagsFilter, a cache channel's first value is the newest publication it matches`, async () => {
      const channel = `stream:latest-sdk-${enc}`;
      await publishBalances(h.url, channel, 1, 5); // USDC 1, 3; the latest (4) is EUR
      const { c, sub } = subscribedClient(Sdk, h.port, channel, { since: {}, tagsFilter: USDC });
      try {
        await waitFor(() => sub.pubs.length >= 1, "the newest USDC value");
        await publishBalances(h.url, channel, 5, 8); // 5 and 7 are USDC
        await waitFor(() => sub.pubs.length >= 3, "two live USDC ones");
        await sleep(100);
        assert.deepEqual(sub.pubs.map((p) => p.data.n), [3, 5, 7]);
        assert.deepEqual(sub.pubs[0].tags, { event: "usdc", asset: "USDC" }); // Centrifugo pushes carry the event as a tag
        const subscribed = sub.events.filter((e) => e.name === "subscribed");
        assert.equal(subscribed.length, 1);
        assert.equal(subscribed[0].ctx.recovered, true);
        assert.equal(sub.events.filter((e) => e.name === "error").length, 0);
      } finally {
        c.disconnect();
      }
    });

    test(`SDK (${enc}): a class with delta=refused gives full publications to delta: 'fossil'`, async () => {
      const channel = `stream:plain-delta-${enc}`;
      const { c, sub } = subscribedClient(Sdk, h.port, channel, { delta: "fossil" });
      try {
        await waitFor(() => sub.state === "subscribed", "subscribed");
        const big = (n) => ({ n, text: "same text ".repeat(100) });
        for (let n = 0; n < 5; n++) await publishOk(h.url, { channel, event: "state", data: big(n) });
        await waitFor(() => sub.pubs.length >= 5, "5 publications");
        assert.deepEqual(sub.pubs.map((p) => p.data), [0, 1, 2, 3, 4].map(big));
        const stats = sub.deltaStats();
        assert.equal(stats.numDeltaPayloads, 0, "no delta on a class that refuses them");
      } finally {
        c.disconnect();
      }
    });

    test(`SDK (${enc}): the cache class (history-size=1) sends deltas to delta: 'fossil' (issue 39)`, async () => {
      // Was: the reply said delta: true, but no delta came (the base was
      // looked up in a history that keeps only the newest publication).
      const channel = `stream:cache-delta-${enc}`;
      const { c, sub } = subscribedClient(Sdk, h.port, channel, { delta: "fossil" });
      try {
        await waitFor(() => sub.state === "subscribed", "subscribed");
        const big = (n) => ({ n, text: "same text ".repeat(100) });
        for (let n = 0; n < 5; n++) await publishOk(h.url, { channel, event: "state", data: big(n) });
        await waitFor(() => sub.pubs.length >= 5, "5 publications");
        assert.deepEqual(sub.pubs.map((p) => p.data), [0, 1, 2, 3, 4].map(big));
        const stats = sub.deltaStats();
        assert.ok(stats.numDeltaPayloads >= 4, `deltas after the first: ${JSON.stringify(stats)}`);
      } finally {
        c.disconnect();
      }
    });
  }

  test("/v1/ws: a cache channel answers \"cache\":true with the latest publication, for no position and for a stale one", async () => {
    const channel = "stream:cache-ws";
    await publishRange(h.url, channel, 1, 10);
    const ws = await wsConnect(h.url);
    try {
      const reply = await wsSubscribe(ws, channel);
      assert.equal(reply.op, "subscribed");
      assert.equal(reply.cache, true);
      assert.equal(reply.offset, 9);
      await ws.inbox.until(() => publicationsOf(ws, channel).length >= 1, { what: "the latest" });
      const [latest] = publicationsOf(ws, channel);
      assert.equal(latest.offset, 9);
      assert.deepEqual(latest.data, { n: 9 });
      // A stale position (trimmed) on another connection: recovered, no reason, the latest.
      const stale = await wsConnect(h.url);
      try {
        const r = await wsSubscribe(stale, channel, { since: { epoch: reply.epoch, offset: 2 } });
        assert.equal(r.recovered, true);
        assert.equal(r.cache, true);
        assert.equal(r.reason, undefined);
        await stale.inbox.until(() => publicationsOf(stale, channel).length >= 1, { what: "the latest" });
        await publishOk(h.url, { channel, event: "state", data: { n: 10 } });
        await receivedExactly(stale, channel, (p) => p.offset, [9, 10]);
      } finally {
        await stale.close();
      }
    } finally {
      await ws.close();
    }
  });

  test("/v1/ws: with a filter, a cache channel's publication is the newest one the filter matches", async () => {
    const channel = "stream:latest-ws";
    await publishBalances(h.url, channel, 1, 7); // USDC 1, 3, 5; the latest (6) is EUR
    await withWs(h.url, async (ws) => {
      const reply = await ws.request({ op: "subscribe", channel, filter: USDC });
      assert.deepEqual([reply.op, reply.cache, reply.offset], ["subscribed", true, 6]);
      await publishBalances(h.url, channel, 7, 9); // 7 is USDC
      await receivedExactly(ws, channel, (p) => [p.offset, p.data.n], [[5, 5], [7, 7]]);
    });
    // A filter no publication of the history matches: no value, live from the head.
    await withWs(h.url, async (ws) => {
      const reply = await ws.request({ op: "subscribe", channel, filter: { key: "asset", cmp: "eq", val: "XLM" } });
      assert.deepEqual([reply.cache, reply.offset], [true, 8]);
      await publishOk(h.url, { channel, event: "xlm", tags: { asset: "XLM" }, data: { n: 9 } });
      await receivedExactly(ws, channel, (p) => p.offset, [9]);
    });
  });

  test("/v1/ws: a class's own history size bounds recovery; another class keeps the global one", async () => {
    const short = "stream:short-1";
    const long = "stream:long-1";
    const a = await publishRange(h.url, short, 1, 6);
    const b = await publishRange(h.url, long, 1, 6);
    const ws = await wsConnect(h.url);
    try {
      const r1 = await wsSubscribe(ws, short, { since: { epoch: a.epoch, offset: 1 } });
      assert.equal(r1.recovered, false);
      assert.equal(r1.reason, "history_expired");
      const r2 = await wsSubscribe(ws, long, { since: { epoch: b.epoch, offset: 1 } });
      assert.equal(r2.recovered, true);
      await ws.inbox.until(() => publicationsOf(ws, long).length >= 4, { what: "4 recovered" });
    } finally {
      await ws.close();
    }
  });

  test("SSE (eventsource): a stale Last-Event-ID on a cache channel gets the latest event and no herald.gap", async () => {
    const channel = "stream:cache-sse";
    const res = await publishRange(h.url, channel, 1, 8);
    const epoch = res.epoch;
    const cursor = makeCursor([{ channel, epoch, offset: 2 }]);
    const { es, inbox } = eventSourceClient(`${h.url}/v1/sse?channel=${encodeURIComponent(channel)}&last_event_id=${cursor}`, [
      "state",
      "herald.gap",
      "herald.cursor",
    ]);
    await cachedThenLive(
      { es, inbox },
      () => publishOk(h.url, { channel, event: "state", data: { n: 8 } }),
      [["state", 7], ["state", 8]],
      makeCursor([{ channel, epoch, offset: 7 }]),
    );
  });

  test("SSE (eventsource): ?event= on a cache channel with a stale cursor gets the newest matching event", async () => {
    const channel = "stream:latest-sse";
    await publishBalances(h.url, channel, 1, 7); // usdc 1, 3, 5; the latest (6) is eur
    const { epoch } = (await getJson(h.url, `/v1/channels/${encodeURIComponent(channel)}`)).json;
    // A position in an epoch the channel no longer has: no exact recovery.
    const stale = makeCursor([{ channel, epoch: "gone", offset: 2 }]);
    const { es, inbox } = eventSourceClient(
      `${h.url}/v1/sse?channel=${encodeURIComponent(channel)}&event=usdc&last_event_id=${stale}`,
      ["usdc", "eur", "herald.gap"],
    );
    await cachedThenLive(
      { es, inbox },
      () => publishBalances(h.url, channel, 7, 9), // 7 is usdc, 8 eur
      [["usdc", 5], ["usdc", 7]],
      makeCursor([{ channel, epoch, offset: 5 }]),
    );
  });
});

test("bad --channel-classes stop start-up with the option and the fault named", () => {
  for (const [arg, why] of [
    ["--channel-classes=stream:* colour=red", 'unknown class option "colour"'],
    ["--channel-classes=chat:* recovery=cache", 'class pattern "chat:*"'],
    ["--channel-classes=stream:* history-size=0", "history-size must be"],
  ]) {
    const r = spawnSync(HERALD_BIN, [arg, "--insecure", "--port=0"], { encoding: "utf8", timeout: 10_000 });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr + r.stdout, /--channel-classes: /);
    assert.ok((r.stderr + r.stdout).includes(why), r.stderr);
  }
});
