// SSE's per-connection event filter, `/v1/sse?channel=..&event=withdrawn&event=topped_up`
// (issue 22 §5; docs/protocol.md "SSE"), with the `eventsource` npm package:
// only the named events arrive, on every channel of the connection; the id
// of each names the position past the publications it skipped, so a new
// EventSource resuming from it gets exactly the matching ones it missed, and
// no `herald.gap`. A bad event name or too many are refused 400 with a JSON
// error.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { eventSourceClient } from "./lib/eventsource.mjs";
import { awaitBackgroundStops, cursorPosition, publishOk, sleep, suiteHerald, waitUntil } from "./lib/herald.mjs";

after(awaitBackgroundStops);

const NAMES = ["withdrawn", "topped_up", "trade", "herald.cursor", "herald.gap"];

/** An EventSource on `channels` with `?event=` for each of `events`; inbox items {type, data, lastEventId}. */
function open(baseUrl, channels, events, { lastEventId } = {}) {
  const qs = [
    ...channels.map((c) => `channel=${encodeURIComponent(c)}`),
    ...events.map((e) => `event=${encodeURIComponent(e)}`),
  ].join("&");
  return eventSourceClient(`${baseUrl}/v1/sse?${qs}`, NAMES, { lastEventId });
}

const EVENTS = ["withdrawn", "topped_up", "trade"];

describe("SSE ?event= filter (eventsource package)", () => {
  const h = suiteHerald(["--history-size=100"]);

  test("only the named events, on both channels; the ids skip the others; a resume gets exactly the missed matching ones", async () => {
    const channels = ["stream:sse-filter-a", "stream:sse-filter-b"];
    const first = open(h.url, channels, ["withdrawn", "topped_up"]);
    try {
      // Nothing to replay: the first event is herald.cursor (the connection is subscribed).
      await first.inbox.until((items) => items.some((e) => e.type === "herald.cursor"), { what: "herald.cursor", timeoutMs: 5000 });
      for (let i = 0; i < 12; i++)
        await publishOk(h.url, { channel: channels[i % 2], event: EVENTS[i % 3], data: { i } });
      // i = 10: topped_up on channel a, the last matching one.
      await first.inbox.until((items) => items.some((e) => e.data === JSON.stringify({ i: 10 })), { what: "i=10", timeoutMs: 5000 });
      await sleep(100);
      const pubs = first.inbox.items.filter((e) => EVENTS.includes(e.type));
      assert.deepEqual(
        pubs.map((e) => JSON.parse(e.data).i),
        [0, 1, 3, 4, 6, 7, 9, 10],
      );
      assert.ok(pubs.every((e) => e.type !== "trade"));
      assert.ok(!first.inbox.items.some((e) => e.type === "herald.gap"));
      // The id of i = 10 names channel a at offset 6 and channel b at offset 5 (i = 9).
      const lastId = pubs.at(-1).lastEventId;
      assert.equal(cursorPosition(lastId, channels[0]).offset, 6);
      assert.equal(cursorPosition(lastId, channels[1]).offset, 5);
      first.close();

      // Missed while away: i = 12 .. 20. i = 11 (trade on b) was skipped before, and is after lastId.
      for (let i = 11; i < 21; i++)
        await publishOk(h.url, { channel: channels[i % 2], event: EVENTS[i % 3], data: { i } });
      const again = open(h.url, channels, ["withdrawn", "topped_up"], { lastEventId: lastId });
      try {
        // i = 19: topped_up on b, the last matching one.
        await again.inbox.until((items) => items.some((e) => e.data === JSON.stringify({ i: 19 })), { what: "i=19", timeoutMs: 5000 });
        await publishOk(h.url, { channel: channels[0], event: "withdrawn", data: { i: 22 } });
        await again.inbox.until((items) => items.some((e) => e.data === JSON.stringify({ i: 22 })), { what: "i=22", timeoutMs: 5000 });
        const got = again.inbox.items.filter((e) => EVENTS.includes(e.type)).map((e) => JSON.parse(e.data).i);
        // Each channel's replay in order (a: even i, b: odd i); between channels no set order.
        assert.deepEqual(got.filter((i) => i % 2 === 0), [12, 16, 18, 22]);
        assert.deepEqual(got.filter((i) => i % 2 === 1), [13, 15, 19]);
        assert.ok(!again.inbox.items.some((e) => e.type === "herald.gap"));
      } finally {
        again.close();
      }
    } finally {
      first.close();
    }
  });

  test("bad event names and too many are refused 400 with a JSON error", async () => {
    for (const [query, code] of [
      ["event=", "invalid_event"],
      ["event=herald.gap", "invalid_event"],
      ["event=has%20space", "invalid_event"],
      ["event=" + "x".repeat(65), "invalid_event"],
      [Array.from({ length: 33 }, (_, i) => `event=e${i}`).join("&"), "invalid_request"],
    ]) {
      const res = await fetch(`${h.url}/v1/sse?channel=stream:1&${query}`);
      assert.equal(res.status, 400, query);
      const body = await res.json();
      assert.equal(body.error.code, code, query);
      assert.ok(body.error.message.length > 0);
    }
    // 32 distinct names (and repeats) are fine.
    const ok = Array.from({ length: 32 }, (_, i) => `event=e${i}`).join("&") + "&event=e0";
    const ac = new AbortController();
    const res = await fetch(`${h.url}/v1/sse?channel=stream:1&${ok}`, { signal: ac.signal });
    assert.equal(res.status, 200);
    ac.abort();
  });
});
