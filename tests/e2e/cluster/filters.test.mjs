// Tags and filters in cluster mode (issue 22 §5; docs/cluster.md "Envelope"):
// two herald instances on one Redis. Publications with tags are published
// on instance A (POST /v1/publish `tags`); subscribers on instance B get them
// through Redis (the envelope's `tags`, ARGV[10] of the publish script): the
// real `centrifuge` SDK's `tagsFilter` on both builds gets exactly the
// matching ones with their tags in ctx.tags, also after a dropped connection
// recovered from B's copy of the history (synced from the Redis stream); a
// `/v1/ws` subscriber with a `filter` on B likewise.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { ENCODINGS, withProxiedSubscriber } from "../lib/centrifuge.mjs";
import { publishOk } from "../lib/herald.mjs";
import { publicationsOf, wsConnect } from "../lib/ws.mjs";
import { sleep, suiteCluster, waitUntil } from "./lib.mjs";

const waitFor = (fn, what, timeoutMs = 10_000) => waitUntil(fn, { what, timeoutMs });

const FILTER = { op: "and", nodes: [{ key: "event", cmp: "neq", val: "trade" }, { key: "asset", cmp: "eq", val: "USDC" }] };
const EVENTS = ["withdrawn", "trade", "topped_up"];
const ASSETS = ["USDC", "USDC", "XLM"];

const nth = (i) => ({ event: EVENTS[i % 3], tags: { asset: ASSETS[Math.floor(i / 3) % 3] }, data: { i } });
const matches = (i) => nth(i).event !== "trade" && nth(i).tags.asset === "USDC";
const range = (from, to) => Array.from({ length: to - from }, (_, k) => from + k);

async function publishRange(url, channel, from, to) {
  for (const i of range(from, to)) await publishOk(url, { channel, ...nth(i) });
}

describe("cluster: tags through Redis, filters on another instance", () => {
  const fx = suiteCluster(2);

  for (const [enc, Sdk] of ENCODINGS) {
    test(`centrifuge SDK (${enc}) tagsFilter on B, publications on A, a drop recovered on B`, async () => {
      const [a, b] = fx.hs;
      const channel = `stream:cluster-filter-${enc}`;
      await withProxiedSubscriber(Sdk, b.port, channel, { tagsFilter: FILTER }, async ({ sub, proxy }) => {
        await publishRange(a.url, channel, 0, 10);
        assert.ok(matches(9));
        await waitFor(() => sub.pubs.some((p) => p.data.i === 9), "i=9 through Redis");
        proxy.drop();
        await waitFor(() => sub.state === "subscribing", "the drop seen");
        await publishRange(a.url, channel, 10, 25);
        await waitFor(() => sub.state === "subscribed", "subscribed again");
        await publishRange(a.url, channel, 25, 28); // 27: withdrawn USDC
        assert.ok(matches(27));
        await waitFor(() => sub.pubs.some((p) => p.data.i === 27), "i=27");
        await sleep(150);
        assert.deepEqual(sub.pubs.map((p) => p.data.i), range(0, 28).filter(matches));
        for (const p of sub.pubs) assert.deepEqual({ ...p.tags }, { event: nth(p.data.i).event, ...nth(p.data.i).tags });
        const subscribed = sub.events.filter((e) => e.name === "subscribed");
        assert.equal(subscribed.at(-1).ctx.recovered, true);
      });
    });
  }

  test("/v1/ws filter on B, publications on A: the matching ones with their tags", async () => {
    const [a, b] = fx.hs;
    const channel = "stream:cluster-filter-ws";
    const c = await wsConnect(b.url);
    try {
      assert.equal((await c.request({ op: "subscribe", channel, filter: FILTER })).op, "subscribed");
      await publishRange(a.url, channel, 0, 10);
      await c.inbox.until(() => publicationsOf(c, channel).some((m) => m.data.i === 9), { what: "i=9", timeoutMs: 10_000 });
      await sleep(100);
      const got = publicationsOf(c, channel);
      assert.deepEqual(got.map((m) => m.data.i), range(0, 10).filter(matches));
      assert.deepEqual(got[0].tags, { asset: "USDC" });
      assert.deepEqual(got.map((m) => m.offset), got.map((m) => m.data.i + 1));
    } finally {
      await c.close();
    }
  });
});
