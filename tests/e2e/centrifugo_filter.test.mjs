// Tag filters on Centrifugo's client protocol (issue 22 §5), with the real
// `centrifuge` SDK's `tagsFilter` on both of its builds (JSON and Protobuf):
// the subscription receives exactly the publications whose tags (the event
// name as tag `event`, and the publisher's `tags`) match, each with its tags
// in ctx.tags, beside an unfiltered subscriber on the same channel that gets
// them all; after a dropped connection the recovery brings exactly the
// matching ones it missed, no duplicate and no gap. An invalid filter is
// refused (107, the subscription ends with that code) and the connection
// stays usable. On a raw JSON socket: a filter together with `delta` is
// refused 107, as Centrifugo keeps the two apart. Publications get tags from
// POST /v1/publish (`tags`, a tag `event` refused 400) and /api/publish
// (`tags.event` is the event). docs/centrifugo.md "Tags filter" is the contract.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";


import { awaitBackgroundStops, publish, publishOk, sleep, suiteHerald, waitUntil } from "./lib/herald.mjs";
import { api, ENCODINGS, rawCentrifugo, resubscribed, sdkClient, subscribedClient, subscription, withProxiedSubscriber } from "./lib/centrifuge.mjs";

after(awaitBackgroundStops);

const waitFor = (fn, what, timeoutMs = 8000) => waitUntil(fn, { what, timeoutMs });

// USDC withdrawals and top-ups: what a wallet screen filters for.
const FILTER = {
  op: "and",
  nodes: [
    { key: "event", cmp: "in", vals: ["withdrawn", "topped_up"] },
    { key: "asset", cmp: "eq", val: "USDC" },
  ],
};
const EVENTS = ["withdrawn", "topped_up", "trade"];
const ASSETS = ["USDC", "XLM"];

/** The i-th publication: its event, tags, data, and whether FILTER matches it. */
function nth(i) {
  const event = EVENTS[i % 3];
  const asset = ASSETS[Math.floor(i / 3) % 2];
  return {
    event,
    tags: { asset, seq: String(i) },
    data: { i },
    matches: asset === "USDC" && event !== "trade",
  };
}

/** Publishes nth(from) .. nth(to - 1) to `channel`. */
async function publishRange(url, channel, from, to) {
  for (let i = from; i < to; i++) {
    const { event, tags, data } = nth(i);
    await publishOk(url, { channel, event, tags, data });
  }
}

const matching = (from, to) => {
  const out = [];
  for (let i = from; i < to; i++) if (nth(i).matches) out.push(i);
  return out;
};

for (const [enc, Sdk] of ENCODINGS) {
  describe(`centrifuge SDK (${enc}): tagsFilter`, () => {
    const h = suiteHerald(["--history-size=200"]);

    test("exactly the matching publications, with their tags in ctx.tags; an unfiltered subscriber gets all", async () => {
      const channel = `stream:filter-${enc}`;
      const { c, sub } = subscribedClient(Sdk, h.port, channel, { tagsFilter: FILTER });
      // A second client for the unfiltered subscriber (one subscription per channel and client).
      const { c: other, sub: plain } = subscribedClient(Sdk, h.port, channel);
      try {
        await waitFor(() => sub.state === "subscribed" && plain.state === "subscribed", "subscribed");
        // 37 publications; the last one (i = 36: withdrawn, USDC) matches: the marker.
        assert.ok(nth(36).matches);
        await publishRange(h.url, channel, 0, 37);
        await waitFor(() => plain.pubs.length >= 37, "37 publications for the plain subscriber");
        await waitFor(() => sub.pubs.some((p) => p.data.i === 36), "the last matching publication");
        await sleep(100);
        assert.deepEqual(sub.pubs.map((p) => p.data.i), matching(0, 37));
        for (const p of sub.pubs) {
          const { event, tags } = nth(p.data.i);
          assert.deepEqual({ ...p.tags }, { event, ...tags }, `tags of ${p.data.i}`);
        }
        assert.deepEqual(plain.pubs.map((p) => p.data.i), [...Array(37).keys()]);
        assert.equal(plain.pubs[2].tags.event, "trade");
      } finally {
        c.disconnect();
        other.disconnect();
      }
    });

    test("after a dropped connection the recovery brings exactly the matching ones missed", async () => {
      const channel = `stream:filter-recover-${enc}`;
      await withProxiedSubscriber(Sdk, h.port, channel, { tagsFilter: FILTER }, async ({ sub, proxy }) => {
        await publishRange(h.url, channel, 0, 12);
        await waitFor(() => sub.pubs.some((p) => p.data.i === 7), "the first matching ones"); // 7: topped_up USDC
        // 8..11 do not match (trade USDC, then XLM): the position still moved past them.
        proxy.drop();
        await waitFor(() => sub.state === "subscribing", "the drop seen");
        await publishRange(h.url, channel, 12, 40);
        await waitFor(() => sub.state === "subscribed", "subscribed again");
        await publishRange(h.url, channel, 40, 49); // 48: withdrawn USDC, the marker
        assert.ok(nth(48).matches);
        await waitFor(() => sub.pubs.some((p) => p.data.i === 48), "the last matching publication");
        await sleep(100);
        assert.deepEqual(sub.pubs.map((p) => p.data.i), matching(0, 49));
        const again = resubscribed(sub);
        assert.equal(again.wasRecovering, true);
        assert.equal(again.recovered, true);
      });
    });

    test("an invalid filter is refused 107 and the connection stays usable", async () => {
      const channel = `stream:filter-bad-${enc}`;
      const c = sdkClient(Sdk, h.port);
      const bad = subscription(c, channel, { tagsFilter: { key: "amount", cmp: "gt", val: "ten" } });
      const good = subscription(c, `${channel}-ok`);
      bad.subscribe();
      c.connect();
      try {
        await waitFor(() => bad.state === "unsubscribed", "the refused subscription ends");
        const ended = bad.events.find((e) => e.name === "unsubscribed");
        assert.equal(ended.ctx.code, 107, JSON.stringify(ended.ctx));
        assert.match(ended.ctx.reason, /decimal number/);
        good.subscribe();
        await waitFor(() => good.state === "subscribed", "another subscription on the same connection");
        await publishOk(h.url, { channel: `${channel}-ok`, event: "withdrawn", data: 1 });
        await waitFor(() => good.pubs.length === 1, "its publication");
        assert.equal(c.state, "connected");
      } finally {
        c.disconnect();
      }
    });
  });
}


describe("Centrifugo JSON protocol on a raw socket: tf", () => {
  const h = suiteHerald([]);

  test("tf with delta is refused 107, a bad tf 107 with its reason; the connection stays", async () => {
    const c = await rawCentrifugo(h.port);
    try {
      c.ws.send(JSON.stringify({ id: 1, connect: {} }));
      await waitFor(() => c.replies.some((r) => r.id === 1), "connect reply");
      const tf = { key: "event", cmp: "eq", val: "withdrawn" };
      c.ws.send(
        [
          { id: 2, subscribe: { channel: "stream:tf-raw", delta: "fossil", tf } },
          { id: 3, subscribe: { channel: "stream:tf-raw", tf: { op: "not", nodes: [] } } },
          { id: 4, subscribe: { channel: "stream:tf-raw", tf: "event=withdrawn" } },
          { id: 5, subscribe: { channel: "stream:tf-raw", tf } },
        ]
          .map((m) => JSON.stringify(m))
          .join("\n"),
      );
      await waitFor(() => [2, 3, 4, 5].every((id) => c.replies.some((r) => r.id === id)), "four replies");
      const reply = (id) => c.replies.find((r) => r.id === id);
      assert.equal(reply(2).error.code, 107, JSON.stringify(reply(2)));
      assert.match(reply(2).error.message, /cannot be combined with "delta"/);
      assert.equal(reply(3).error.code, 107);
      assert.match(reply(3).error.message, /exactly one node/);
      assert.equal(reply(4).error.code, 107);
      assert.ok(reply(5).subscribe, JSON.stringify(reply(5)));
      await publishOk(h.url, { channel: "stream:tf-raw", event: "trade", data: 1 });
      await publishOk(h.url, { channel: "stream:tf-raw", event: "withdrawn", tags: { k: "v" }, data: 2 });
      await waitFor(() => c.replies.some((r) => r.push?.pub?.data === 2), "the matching push");
      const pushes = c.replies.filter((r) => r.push?.pub);
      assert.deepEqual(pushes.map((r) => r.push.pub.data), [2]);
      assert.deepEqual(pushes[0].push.pub.tags, { event: "withdrawn", k: "v" });
      assert.equal(pushes[0].push.pub.offset, 2); // the filtered one counted
      assert.equal(c.closed, null);
    } finally {
      c.ws.close();
    }
  });

  test("publish tags: /v1/publish refuses a tag event and bad shapes (400); /api/publish takes tags.event", async () => {
    for (const tags of [{ event: "x" }, { a: 1 }, ["a"], { "": "x" }, { k: "v".repeat(257) }]) {
      const r = await publish(h.url, { channel: "stream:tags", event: "e", data: 1, tags });
      assert.equal(r.status, 400, JSON.stringify(tags));
      assert.equal(r.json.error.code, "invalid_request");
      assert.match(r.json.error.message, /tag/);
    }
    const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`t${i}`, "v"]));
    const r = await publish(h.url, { channel: "stream:tags", event: "e", data: 1, tags: many });
    assert.equal(r.status, 400);
    assert.match(r.json.error.message, /at most 32 tags/);

    const c = await rawCentrifugo(h.port);
    try {
      c.ws.send(JSON.stringify({ id: 1, connect: {} }));
      c.ws.send(JSON.stringify({ id: 2, subscribe: { channel: "stream:tags", tf: { key: "asset", cmp: "ex" } } }));
      await waitFor(() => c.replies.some((r) => r.id === 2), "subscribe reply");
      await api(h.url, "publish", { channel: "stream:tags", data: { n: 1 }, tags: { event: "withdrawn", asset: "USDC" } });
      await waitFor(() => c.replies.some((r) => r.push?.pub), "the push");
      assert.deepEqual(c.replies.find((r) => r.push?.pub).push.pub.tags, { event: "withdrawn", asset: "USDC" });
    } finally {
      c.ws.close();
    }
  });
});
