// Delta compression on Centrifugo's client protocol, with the real
// `centrifuge` SDK (JSON and Protobuf builds) subscribing with
// `delta: 'fossil'`: the SDK applies each Fossil delta Herald sends to the
// previous value it holds, so a wrong delta, a delta against a publication the
// client does not hold, or a wrong `delta` flag fails the decoded-data checks
// here. Covered per encoding: 200 updates of a ~2 KiB balance object with one
// to three fields changed (every decoded publication equals the published
// one; the SDK's deltaStats() says 199 deltas and at most 15 % of the full
// bytes received), a subscriber without delta on the same channel (full data);
// a dropped connection recovered with the missed publications (first full,
// then deltas); an instance that goes away (3001) and a new epoch on the one
// the client lands on (the next publication full, then deltas again); a
// client closed as slow (3008) that comes back and decodes on. JSON on a raw
// socket: a `delta` other than "fossil" is refused with 107 and the connection
// stays. docs/centrifugo.md "Delta compression" is the contract.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import WebSocket from "ws";

import { awaitBackgroundStops, publishOk, sleep, startHerald, stopInBackground, suiteHerald, waitUntil, withHerald } from "./lib/herald.mjs";
import { closeAsSlow, ENCODINGS, rawCentrifugo, resubscribed, subscribedClient, withProxiedSubscriber } from "./lib/centrifuge.mjs";
import { startProxy } from "./lib/proxy.mjs";

after(awaitBackgroundStops);

const waitFor = (fn, what, timeoutMs = 8000) => waitUntil(fn, { what, timeoutMs });

/**
 * A wallet's state as an indexer publishes it: about 2 KiB of JSON, 14 asset
 * balances and their streams. `next(i)` changes one to three fields.
 */
function balances() {
  const state = { account: "G" + "A".repeat(55), ledger: 1, assets: {} };
  for (let a = 0; a < 14; a++)
    state.assets[`ASSET${a}`] = {
      issuer: "G" + String(a).padStart(55, "B"),
      balance: (1000 + a * 7.25).toFixed(7),
      streams: a % 3,
      updated_at: "2026-12-07T10:00:00Z",
    };
  return {
    state,
    next(i) {
      state.ledger += 1;
      const asset = state.assets[`ASSET${i % 14}`];
      asset.balance = (Number(asset.balance) + 0.5 * (i % 7) + 0.0000001).toFixed(7);
      if (i % 3 === 0) asset.updated_at = `2026-12-07T10:${String(i % 60).padStart(2, "0")}:00Z`;
      return structuredClone(state);
    },
  };
}

/** Publishes `n` successive states to `channel`; returns them. */
async function publishStates(url, channel, gen, n, from = 0) {
  const sent = [];
  for (let i = from; i < from + n; i++) {
    const data = gen.next(i);
    await publishOk(url, { channel, event: "balance", data });
    sent.push(data);
  }
  return sent;
}

for (const [enc, Sdk] of ENCODINGS) {
  describe(`centrifuge SDK (${enc}): delta: 'fossil'`, () => {
    const h = suiteHerald(["--history-size=300"]);

    test("200 updates of a 2 KiB object: decoded equal to the published ones, at most 15 % of the bytes; a plain subscriber gets them whole", async (t) => {
      const channel = `stream:delta-${enc}`;
      const { c, sub } = subscribedClient(Sdk, h.port, channel, { delta: "fossil" });
      const { c: plainClient, sub: plain } = subscribedClient(Sdk, h.port, channel);
      try {
        await waitFor(() => sub.state === "subscribed" && plain.state === "subscribed", "subscribed");
        const sent = await publishStates(h.url, channel, balances(), 200);
        await waitFor(() => sub.pubs.length >= 200 && plain.pubs.length >= 200, "200 publications each");
        await sleep(100);
        assert.equal(sub.pubs.length, 200);
        assert.deepEqual(sub.pubs.map((p) => p.data), sent);
        assert.deepEqual(plain.pubs.map((p) => p.data), sent);
        const stats = sub.deltaStats();
        assert.equal(stats.numPublications, 200);
        assert.equal(stats.numFullPayloads, 1, "the first publication after subscribing is full");
        assert.equal(stats.numDeltaPayloads, 199);
        const full = sent.reduce((n, d) => n + Buffer.byteLength(JSON.stringify(d)), 0);
        assert.ok(Buffer.byteLength(JSON.stringify(sent[0])) > 2000, "the object is about 2 KiB");
        t.diagnostic(`deltaStats: ${stats.bytesReceived} of ${full} bytes received (${((100 * stats.bytesReceived) / full).toFixed(1)} %)`);
        assert.ok(stats.bytesReceived <= 0.15 * full, `received ${stats.bytesReceived} of ${full} bytes`);
        // The plain subscriber's SDK decoded nothing.
        assert.equal(plain.deltaStats().numPublications, 0);
      } finally {
        c.disconnect();
        plainClient.disconnect();
      }
    });

    test("a dropped connection recovers the missed publications: first full, then deltas, all decoded", async () => {
      const channel = `stream:delta-recover-${enc}`;
      await withProxiedSubscriber(Sdk, h.port, channel, { delta: "fossil" }, async ({ sub, proxy }) => {
        const gen = balances();
        const sent = await publishStates(h.url, channel, gen, 20);
        await waitFor(() => sub.pubs.length >= 20, "the first 20");
        proxy.drop();
        await waitFor(() => sub.state === "subscribing", "the drop seen");
        sent.push(...(await publishStates(h.url, channel, gen, 30, 20)));
        await waitFor(() => sub.pubs.length >= 50, "all 50 after the recovery");
        sent.push(...(await publishStates(h.url, channel, gen, 10, 50)));
        await waitFor(() => sub.pubs.length >= 60, "all 60");
        await sleep(100);
        assert.deepEqual(sub.pubs.map((p) => p.data), sent);
        assert.equal(resubscribed(sub).recovered, true);
        const stats = sub.deltaStats();
        // Full: the first after subscribing, and at most the first recovered one.
        assert.ok(stats.numFullPayloads <= 2, `${stats.numFullPayloads} full payloads`);
        assert.equal(stats.numDeltaPayloads, 60 - stats.numFullPayloads);
      });
    });

    test("the instance goes away (3001); on the next one (a new epoch) the first publication is full, then deltas", async () => {
      const channel = `stream:delta-epoch-${enc}`;
      const first = await startHerald(["--history-size=50"]);
      const second = await startHerald(["--history-size=50"]);
      const lb = await startProxy(first.port);
      const { c, sub } = subscribedClient(Sdk, lb.port, channel, { delta: "fossil" });
      try {
        await waitFor(() => sub.state === "subscribed", "subscribed");
        const gen = balances();
        const before = await publishStates(first.url, channel, gen, 10);
        await waitFor(() => sub.pubs.length >= 10, "10 on the first instance");
        lb.retarget(second.port);
        await first.stop();
        await waitFor(() => c.events.some((e) => e.name === "connecting" && e.ctx.code === 3001), "3001");
        await waitFor(() => sub.events.filter((e) => e.name === "subscribed").length === 2, "subscribed on the second");
        const afterMove = await publishStates(second.url, channel, gen, 10, 10);
        await waitFor(() => sub.pubs.length >= 20, "10 on the second instance");
        await sleep(100);
        assert.deepEqual(sub.pubs.map((p) => p.data), [...before, ...afterMove]);
        const stats = sub.deltaStats();
        assert.equal(stats.numFullPayloads, 2, "one full on each instance");
        assert.equal(stats.numDeltaPayloads, 18);
      } finally {
        c.disconnect();
        await lb.close();
        stopInBackground(second);
      }
    });

    test("a client closed as slow (3008) comes back and decodes on", async () => {
      // As in centrifugo.test.mjs: past the kernel's buffers and the 1 MiB
      // high-water mark; the history (4) is too short to recover that much.
      await withHerald(["--client-max-buffer=1048576", "--history-size=4", "--max-publish-bytes=262144"], async (hs) => {
        const channel = `stream:delta-slow-${enc}`;
        await withProxiedSubscriber(Sdk, hs.port, channel, { delta: "fossil" }, async ({ c, sub, proxy }) => {
          const gen = balances();
          const first = await publishStates(hs.url, channel, gen, 5);
          await waitFor(() => sub.pubs.length >= 5, "the first 5");
          assert.deepEqual(sub.pubs.map((p) => p.data), first);
          await closeAsSlow({ url: hs.url, proxy, c, channel, data: (i) => gen.next(5 + i) });
          await waitFor(() => c.state === "connected" && sub.state === "subscribed", "reconnected");
          const seen = sub.pubs.length;
          const last = await publishStates(hs.url, channel, gen, 10, 200);
          await waitFor(() => sub.pubs.length >= seen + 10, "10 after the reconnect");
          await sleep(100);
          assert.deepEqual(sub.pubs.slice(-10).map((p) => p.data), last);
          // The first after the new subscribe is full, the rest deltas.
          assert.ok(sub.deltaStats().numDeltaPayloads >= 4 + 9, JSON.stringify(sub.deltaStats()));
        });
      });
    });
  });
}

describe("Centrifugo JSON protocol: bad delta options", () => {
  const h = suiteHerald([]);

  test("a delta format other than fossil, or not a string, is refused 107; the connection stays", async () => {
    const { ws, replies } = await rawCentrifugo(h.port);
    try {
      ws.send(JSON.stringify({ id: 1, connect: {} }));
      await waitFor(() => replies.some((r) => r.id === 1), "connect reply");
      ws.send(JSON.stringify({ id: 2, subscribe: { channel: "stream:bad-delta", delta: "zstd" } }));
      ws.send(JSON.stringify({ id: 3, subscribe: { channel: "stream:bad-delta", delta: 1 } }));
      ws.send(JSON.stringify({ id: 4, subscribe: { channel: "stream:bad-delta", delta: "fossil" } }));
      await waitFor(() => [2, 3, 4].every((id) => replies.some((r) => r.id === id)), "three replies");
      const byId = (id) => replies.find((r) => r.id === id);
      assert.equal(byId(2).error?.code, 107);
      assert.equal(byId(3).error?.code, 107);
      assert.equal(byId(4).subscribe?.delta, true);
      assert.equal(ws.readyState, WebSocket.OPEN);
    } finally {
      ws.close();
    }
  });
});
