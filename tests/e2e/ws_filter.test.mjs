// /v1/ws's per-channel filter (issue 22 §5; docs/protocol.md "Filters"), with
// the `ws` package: a subscribe with `"filter": <FilterNode>` receives only
// the matching publications of that channel, each with its `tags`, while the
// same connection's other channel gets everything; a resubscribe with `since`
// after a disconnect replays only the matching ones it missed; a bad filter
// gets the command error shape (`invalid_request`, the reason, the channel).

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { awaitBackgroundStops, publishOk, sleep, suiteHerald } from "./lib/herald.mjs";
import { publicationsOf, wsConnect } from "./lib/ws.mjs";

after(awaitBackgroundStops);

const FILTER = {
  op: "or",
  nodes: [
    { key: "event", cmp: "eq", val: "withdrawn" },
    { key: "amount", cmp: "gte", val: "100" },
  ],
};

// [event, amount]: the publications of every test here.
const PUBS = [
  ["withdrawn", "5"],
  ["topped_up", "20"],
  ["topped_up", "100.0"],
  ["trade", "99.9999999"],
  ["trade", "1000"],
  ["withdrawn", "0.1"],
];
const MATCHING = [0, 2, 4, 5];

describe("/v1/ws subscribe filter", () => {
  const h = suiteHerald(["--history-size=50"]);

  test("only matching publications on the filtered channel, all on the other; tags in each publication", async () => {
    const c = await wsConnect(h.url);
    try {
      const sub = await c.request({ op: "subscribe", channel: "stream:wsf", filter: FILTER });
      assert.equal(sub.op, "subscribed", JSON.stringify(sub));
      assert.equal((await c.request({ op: "subscribe", channel: "stream:wsf-all" })).op, "subscribed");
      for (const [i, [event, amount]] of PUBS.entries()) {
        await publishOk(h.url, { channel: "stream:wsf", event, tags: { amount }, data: { i } });
        await publishOk(h.url, { channel: "stream:wsf-all", event, tags: { amount }, data: { i } });
      }
      await c.inbox.until(() => publicationsOf(c, "stream:wsf-all").length >= PUBS.length, { what: "all on the other channel" });
      await c.inbox.until(() => publicationsOf(c, "stream:wsf").some((m) => m.data.i === 5), { what: "the last matching one" });
      await sleep(100);
      const got = publicationsOf(c, "stream:wsf");
      assert.deepEqual(got.map((m) => m.data.i), MATCHING);
      assert.deepEqual(got.map((m) => m.offset), MATCHING.map((i) => i + 1)); // offsets count every publication
      assert.deepEqual(got[1].tags, { amount: "100.0" });
      assert.equal(got[1].event, "topped_up");
      assert.deepEqual(publicationsOf(c, "stream:wsf-all").map((m) => m.data.i), [0, 1, 2, 3, 4, 5]);
      assert.ok(!c.inbox.items.some((m) => m.op === "gap"));
    } finally {
      await c.close();
    }
  });

  test("a resubscribe with since replays only the matching publications it missed", async () => {
    const channel = "stream:wsf-since";
    const first = await wsConnect(h.url);
    await first.request({ op: "subscribe", channel, filter: FILTER });
    await publishOk(h.url, { channel, event: "withdrawn", data: { i: -1 } });
    await first.inbox.until(() => publicationsOf(first, channel).length === 1, { what: "the first" });
    const since = { epoch: (await (await fetch(`${h.url}/v1/channels/${channel}`)).json()).epoch, offset: 1 };
    await first.close();
    for (const [i, [event, amount]] of PUBS.entries())
      await publishOk(h.url, { channel, event, tags: { amount }, data: { i } });
    const again = await wsConnect(h.url);
    try {
      const reply = await again.request({ op: "subscribe", channel, since, filter: FILTER });
      assert.equal(reply.recovered, true, JSON.stringify(reply));
      await again.inbox.until(() => publicationsOf(again, channel).some((m) => m.data.i === 5), { what: "the replay" });
      await sleep(100);
      assert.deepEqual(publicationsOf(again, channel).map((m) => m.data.i), MATCHING);
    } finally {
      await again.close();
    }
  });

  test("a bad filter is refused invalid_request with the reason and the channel; the connection stays", async () => {
    const c = await wsConnect(h.url);
    try {
      for (const filter of [
        { key: "amount", cmp: "between", val: "1" },
        { op: "and", nodes: [] },
        "event=withdrawn",
        { key: "amount", cmp: "lt", val: "lots" },
      ]) {
        const reply = await c.request({ op: "subscribe", channel: "stream:wsf-bad", filter });
        assert.equal(reply.op, "error", JSON.stringify(reply));
        assert.equal(reply.code, "invalid_request");
        assert.equal(reply.channel, "stream:wsf-bad");
        assert.match(reply.message, /^invalid "filter": /);
      }
      assert.equal((await c.request({ op: "subscribe", channel: "stream:wsf-bad" })).op, "subscribed");
    } finally {
      await c.close();
    }
  });
});
