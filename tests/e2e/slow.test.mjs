// Clients that stop reading: Herald must close them (slow client over
// --client-max-buffer, or --write-timeout when writes stall) without hurting
// the other subscribers and without its memory growing. See docs/protocol.md
// ("SSE endings", WebSocket close code 1013, --write-timeout).
//
// Loopback kernel buffers are large (the server's socket send buffer grows to
// about 4 MiB here), so a client that does not read only backs data up into
// Herald's own queue after several MiB: the tests publish in batches until
// the slow connection goes away (watching GET /healthz "connections"),
// with a cap, instead of a fixed count.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import {
  awaitBackgroundStops,
  cursorPosition,
  getJson,
  probeUntilDelivered,
  publishOk,
  rawSse,
  sleep,
  sseReady,
  suiteHerald,
  waitUntil,
} from "./lib/herald.mjs";
import { rawWsConnect } from "./lib/ws.mjs";

const PAD = "x".repeat(2000); // ~2 KB publications
const MAX_PUBLICATIONS = 8000; // ~16 MB: well past kernel buffers + the client buffer
// Under AddressSanitizer (HERALD_TEST_SANITIZED=1, set by the ctest
// registration of a sanitized build) freed memory sits in ASan's quarantine
// (256 MiB by default) and every allocation carries redzones, so the RSS bound
// says nothing about Herald there: it is relaxed by the quarantine plus the
// same margin again. Everything else in this file is checked as usual.
const SANITIZED = process.env.HERALD_TEST_SANITIZED === "1";
const RSS_LIMIT_KB = (SANITIZED ? 200 + 256 + 200 : 200) * 1024;
const TEST_TIMEOUT = 50_000;

const connections = async (h) => (await getJson(h.url, "/healthz")).json.connections;

/**
 * Publishes ~2 KB publications to `channel` with 4 concurrent publishers, in
 * batches of 200, until `done()` is true or MAX_PUBLICATIONS were sent.
 * Returns {count, maxRssKb, doneAt} (doneAt: publications sent when done() became true).
 */
async function publishUntil(h, channel, done, { max = MAX_PUBLICATIONS } = {}) {
  let count = 0;
  let maxRssKb = h.rssKb();
  let doneAt = null;
  while (count < max) {
    await Promise.all(
      [0, 1, 2, 3].map(async (p) => {
        for (let i = 0; i < 50; i++) await publishOk(h.url, { channel, event: "big", data: { p, i, pad: PAD } });
      }),
    );
    count += 200;
    maxRssKb = Math.max(maxRssKb, h.rssKb());
    if (await done()) {
      doneAt = count;
      break;
    }
  }
  return { count, maxRssKb, doneAt };
}

/** Asserts `offsets` are consecutive integers. */
function assertConsecutive(offsets, what) {
  for (let i = 1; i < offsets.length; i++) {
    if (offsets[i] !== offsets[i - 1] + 1) {
      assert.fail(`${what}: offset ${offsets[i - 1]} is followed by ${offsets[i]} (index ${i})`);
    }
  }
}

/** Close reasons herald logged at debug level ("connection N closed: <reason>"). */
const loggedReasons = (h) => [...h.log().matchAll(/connection \d+ closed: (\w+)/g)].map((m) => m[1]);

/**
 * The herald of a describe block run with `args`, and the block's clean-up
 * list: functions (async or not) run in order before it stops.
 * @param {string[]} args herald flags
 * @returns {{h: object, cleanup: Array<() => any>}} `h` the suiteHerald() handle
 */
function suiteWithCleanup(args) {
  const cleanup = [];
  const h = suiteHerald(args, {
    beforeStop: async () => {
      for (const f of cleanup) await f();
    },
  });
  return { h, cleanup };
}

/**
 * Two SSE subscribers to `channel` on `h`, both registered in `cleanup`:
 * `normal` (sseReady(), reading) and `slow` (rawSse(), which pause() stops
 * reading), returned once a probe publication has reached `slow`.
 * @returns {Promise<{normal: object, slow: object}>}
 * @throws when no probe reaches `slow` within waitUntil's default 5 s
 */
async function normalAndSlowSse(h, channel, cleanup) {
  const normal = await sseReady(h.url, [channel]);
  cleanup.push(() => normal.close());
  const slow = await rawSse(h.port, `/v1/sse?channel=${channel}`);
  cleanup.push(async () => slow.destroy());
  await waitUntil(
    async () => {
      await publishOk(h.url, { channel, event: "probe", data: { probe: "slow" } });
      return slow.events().some((e) => e.event === "probe");
    },
    { intervalMs: 100, what: "a probe on the slow client" },
  );
  return { normal, slow };
}

/**
 * Waits (20 s at most) until the SSE subscriber `normal` has received
 * `channel`'s publication at `lastOffset` and asserts the offsets it got are
 * consecutive; returns them.
 * @returns {Promise<number[]>}
 */
async function normalReaches(normal, channel, lastOffset) {
  await normal.events.until(
    (items) => {
      const last = items.at(-1);
      return last && cursorPosition(last.id, channel).offset >= lastOffset;
    },
    { timeoutMs: 20_000, what: `the normal subscriber at offset ${lastOffset}` },
  );
  const offsets = normal.events.items.map((e) => cursorPosition(e.id, channel).offset);
  assertConsecutive(offsets, "normal subscriber");
  return offsets;
}

/**
 * Lets the slow client read again (`resume()`) and waits up to 15 s for its
 * connection to end; returns why it ended (its `ended` value).
 * @throws {assert.AssertionError} when it has not ended by then
 */
async function resumedEnds(slow, resume) {
  resume();
  const why = await Promise.race([slow.ended, sleep(15_000).then(() => "timeout")]);
  assert.notEqual(why, "timeout", "the slow client's connection ends once it reads");
  return why;
}

// Herald processes stopped in the background by the suites: wait for them.
after(() => awaitBackgroundStops());

describe("slow clients (--client-max-buffer=65536)", () => {
  const { h, cleanup } = suiteWithCleanup(["--client-max-buffer=65536", "--log-level=debug"]);

  test("an SSE client that stops reading is closed; the others get everything; memory stays bounded", { timeout: TEST_TIMEOUT }, async (t) => {
    const channel = "stream:slow-sse";
    const { normal, slow } = await normalAndSlowSse(h, channel, cleanup);
    // A last marker: both clients have everything up to it.
    const startOffset = (await publishOk(h.url, { channel, event: "marker", data: 0 }))[channel];
    const hasMarker = (events) => events.some((e) => e.event === "marker");
    await waitUntil(() => hasMarker(normal.events.items) && hasMarker(slow.events()), {
      what: "the marker on both clients",
    });
    slow.pause();
    const before = await connections(h);

    const { count, maxRssKb, doneAt } = await publishUntil(h, channel, async () => (await connections(h)) < before);
    assert.ok(doneAt !== null, `the slow SSE client was not closed after ${count} publications of ~2 KB`);
    assert.ok(maxRssKb < RSS_LIMIT_KB, `server RSS reached ${maxRssKb} KiB`);

    // The normal subscriber receives every publication, in order.
    const lastOffset = startOffset + count;
    const offsets = await normalReaches(normal, channel, lastOffset);
    assert.equal(offsets.at(-1), lastOffset);
    assert.ok(normal.events.items.every((e) => e.event !== "herald.gap"), "no gap for the normal subscriber");

    // The slow client, reading again, drains what was sent and sees the end.
    const why = await resumedEnds(slow, () => slow.resume());
    const events = slow.events();
    const pubs = events.filter((e) => e.event !== "herald.gap");
    assertConsecutive(
      pubs.map((e) => cursorPosition(e.id, channel).offset),
      "slow client (no silent hole before the close)",
    );
    assert.ok(pubs.length < count, `the slow client got ${pubs.length} of ${count}: it was cut`);
    const gaps = events.filter((e) => e.event === "herald.gap");
    t.diagnostic(`closed after ${count} publications; slow client got ${pubs.length} then ${gaps.length ? "a herald.gap" : "no gap"} (${why}); max RSS ${maxRssKb} KiB`);
    if (gaps.length > 0) {
      assert.equal(gaps.length, 1);
      assert.equal(events.at(-1), gaps[0], "the gap is the last event");
      assert.equal(gaps[0].data, '{"reason":"slow_client"}');
    }
    const reasons = loggedReasons(h);
    if (reasons.length > 0) assert.ok(reasons.includes("slow_client"), `logged close reasons: ${reasons}`);
    assert.ok(h.rssKb() < RSS_LIMIT_KB);
  });

  test("a WebSocket client that stops reading is closed (1013 or dropped); the others get everything", { timeout: TEST_TIMEOUT }, async (t) => {
    const channel = "stream:slow-ws";
    const normal = await sseReady(h.url, [channel]);
    cleanup.push(() => normal.close());
    const slow = await rawWsConnect(h.port);
    cleanup.push(async () => slow.destroy());
    slow.sendJson({ op: "subscribe", id: 1, channel });
    await slow.frames.until((f) => f.some((x) => x.json?.op === "subscribed"), { what: "subscribed" });
    await probeUntilDelivered(h.url, slow.frames, [channel], {
      isProbe: (f, tag) => f.json?.op === "publication" && f.json.data?.probe === tag,
    });
    const startOffset = (await publishOk(h.url, { channel, event: "marker", data: 0 }))[channel];
    await slow.frames.until((f) => f.some((x) => x.json?.event === "marker"), { what: "the marker" });
    slow.socket.pause();
    const before = await connections(h);

    const { count, maxRssKb, doneAt } = await publishUntil(h, channel, async () => (await connections(h)) < before);
    assert.ok(doneAt !== null, `the slow WebSocket client was not closed after ${count} publications`);
    assert.ok(maxRssKb < RSS_LIMIT_KB, `server RSS reached ${maxRssKb} KiB`);

    await normalReaches(normal, channel, startOffset + count);

    const why = await resumedEnds(slow, () => slow.socket.resume());
    const pubs = slow.messages().filter((m) => m.op === "publication");
    assertConsecutive(pubs.map((m) => m.offset), "slow WebSocket client");
    assert.ok(pubs.length < count + 1, "it was cut");
    const close = slow.frames.items.find((f) => f.opcode === 8);
    t.diagnostic(`closed after ${count} publications; slow client got ${pubs.length}, close frame ${close ? close.code : "none"} (${why}); max RSS ${maxRssKb} KiB`);
    if (close) {
      assert.equal(close.code, 1013, `close code ${close.code} ${close.reason}`);
      assert.equal(slow.frames.items.at(-1), close, "the close frame is the last frame");
    }
    assert.ok(
      slow.messages().every((m) => m.op !== "gap"),
      "no gap message: the slow client is closed, not skipped",
    );
    const reasons = loggedReasons(h);
    if (reasons.length > 0) assert.ok(reasons.filter((r) => r === "slow_client").length >= 2, `logged: ${reasons}`);
  });
});

describe("--write-timeout=2", () => {
  // A big client buffer, so only the write timeout can close the client.
  const { h, cleanup } = suiteWithCleanup(["--write-timeout=2", "--client-max-buffer=67108864", "--log-level=debug"]);

  test("an SSE client that never reads is closed ~2 s after its writes stall", { timeout: TEST_TIMEOUT }, async (t) => {
    const channel = "stream:slow-timeout";
    const { normal, slow } = await normalAndSlowSse(h, channel, cleanup);
    slow.pause();
    const before = await connections(h);

    // ~6 MB: more than the kernel buffers hold (about 4 MiB sent + 128 KiB
    // received here), so writes stall before the publishing ends.
    const started = Date.now();
    let closedAt = null;
    const watcher = (async () => {
      while (closedAt === null && Date.now() - started < 30_000) {
        if ((await connections(h)) < before) closedAt = Date.now();
        else await sleep(50);
      }
    })();
    const { count } = await publishUntil(h, channel, async () => false, { max: 3000 });
    const publishedAt = Date.now();
    await watcher;
    assert.ok(closedAt !== null, "the stalled client was closed");
    const sinceEnd = closedAt - publishedAt;
    const sinceStart = closedAt - started;
    assert.ok(sinceStart >= 2000, `closed ${sinceStart} ms after publishing started: before the write timeout could pass`);
    assert.ok(sinceEnd <= 5000, `closed ${sinceEnd} ms after the last publication (writes had stalled before it)`);
    t.diagnostic(`closed ${sinceStart} ms after publishing started, ${sinceEnd} ms after it ended (${count} publications)`);
    const reasons = loggedReasons(h);
    if (reasons.length > 0) assert.ok(reasons.includes("write_timeout"), `logged close reasons: ${reasons}`);

    // The normal subscriber is unaffected.
    await normal.events.until((items) => items.filter((e) => e.event === "big").length >= count, {
      timeoutMs: 20_000,
      what: `${count} publications on the normal subscriber`,
    });
    assertConsecutive(
      normal.events.items.map((e) => cursorPosition(e.id, channel).offset),
      "normal subscriber",
    );
    // The closed client drains what the kernel held, then sees the end.
    await resumedEnds(slow, () => slow.resume());
    assertConsecutive(
      slow.events().map((e) => cursorPosition(e.id, channel).offset),
      "stalled client",
    );
  });
});
