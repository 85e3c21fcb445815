// SSE subscriptions (GET /v1/sse) against real herald processes, with curl
// as the client: headers, delivery, heartbeats, recovery with Last-Event-ID,
// gaps, and malformed cursors. See docs/protocol.md.

import assert from "node:assert/strict";
import net from "node:net";
import { after, describe, test } from "node:test";

import { encodeAccountId } from "../../demo/strkey.mjs";
import {
  awaitBackgroundStops,
  badAccountId,
  channelHash,
  channelOfEvent,
  cursorPosition,
  getJson,
  makeCursor,
  parseCursor,
  probeUntilDelivered,
  publishOk,
  sleep,
  sseCurl,
  sseReady,
  startHerald,
  suiteHerald,
  waitUntil,
} from "./lib/herald.mjs";

const USER = encodeAccountId(Uint8Array.from({ length: 32 }, (_, i) => (i * 7 + 3) & 0xff));
const TEST_TIMEOUT = 20_000;

/** Closes every client in `list` (ignoring failures). */
async function closeAll(list) {
  await Promise.all(list.map((c) => c.close().catch(() => {})));
  list.length = 0;
}

/**
 * The herald of a describe block run with `args`, and the list of its
 * tests' SSE clients, all closed (closeAll) before it stops.
 * @param {string[]} args herald flags
 * @returns {{h: object, clients: object[]}} `h` the suiteHerald() handle
 */
function suiteWithClients(args) {
  const clients = [];
  const h = suiteHerald(args, { beforeStop: () => closeAll(clients) });
  return { h, clients };
}

/** Waits for `n` events after index `from` and returns them. */
async function eventsAfter(sub, from, n, timeoutMs = 5000) {
  return sub.events.until((items) => items.length >= from + n && items.slice(from, from + n), {
    timeoutMs,
    what: `${n} events after #${from}`,
  });
}

/** Asserts nothing but heartbeats arrives on `sub` for `ms` after `count` events. */
async function assertNoMoreEvents(sub, count, ms = 300) {
  await sleep(ms);
  assert.equal(
    sub.events.items.length,
    count,
    `unexpected extra events: ${JSON.stringify(sub.events.items.slice(count))}`,
  );
}

// Herald processes stopped in the background by the suites: wait for them.
after(() => awaitBackgroundStops());

describe("SSE (default history)", () => {
  const { h, clients } = suiteWithClients(["--sse-heartbeat=1"]);

  test("two channels: status, headers, order, ids, names and data unchanged", { timeout: TEST_TIMEOUT }, async () => {
    const stream = "stream:sse-basic";
    const user = `user:${USER}`;
    const channels = [stream, user];
    const sub = await sseReady(h.url, channels);
    clients.push(sub);

    assert.equal(await sub.status, 200);
    const headers = await sub.headers;
    assert.equal(headers["content-type"], "text/event-stream");
    assert.equal(headers["cache-control"], "no-cache");
    assert.equal(headers["x-accel-buffering"], "no");
    const body = sub.raw().slice(sub.raw().indexOf("\r\n\r\n") + 4);
    assert.ok(body.startsWith("retry: 2000\n"), `body starts with ${JSON.stringify(body.slice(0, 40))}`);
    assert.deepEqual(sub.retries.slice(0, 1), [2000]);

    const payloads = [
      { event: "created", data: { text: "line1\nline2", crlf: "a\r\nb\rc", tab: "\t" } },
      { event: "withdrawn", data: { amount: "12.5000000", unicode: "héllo wörld 中文 🚀 𝄞", sep: "\u2028\u2029" } },
      {
        event: "topped_up",
        data: { nested: { deep: [1, [2, [3, { four: 4 }]]], empty: {}, list: [] }, n: -1.5, t: true, f: false, z: null },
      },
      { event: "paused", data: "data: fake\n\nevent: x" },
      { event: "resumed.v2:final-x", data: ["id: 1", "retry: 1", ": comment", "\n\n\n"] },
    ];
    const replies = [];
    for (const p of payloads) replies.push(await publishOk(h.url, { channels, ...p }));
    for (const [i, r] of replies.entries()) {
      assert.deepEqual(Object.keys(r), channels, `reply ${i} lists the channels in request order`);
    }

    const events = await eventsAfter(sub, sub.mark, 10);
    await assertNoMoreEvents(sub, sub.mark + 10);
    let prevId = sub.events.items[sub.mark - 1].id;
    const perChannel = { [stream]: [], [user]: [] };
    for (const e of events) {
      const ch = channelOfEvent(prevId, e.id, channels);
      assert.ok(ch, `event id ${e.id} advances exactly one channel from ${prevId}`);
      perChannel[ch].push(e);
      prevId = e.id;
      assert.ok(!e.data.includes("\n"), "data is one line");
      assert.equal(sub.events.items.filter((x) => x.event === "x").length, 0, "no injected event");
    }
    for (const ch of channels) {
      const got = perChannel[ch];
      assert.equal(got.length, 5, `${ch} got 5 events`);
      got.forEach((e, i) => {
        assert.equal(e.event, payloads[i].event, `${ch} event #${i} name`);
        assert.deepEqual(JSON.parse(e.data), payloads[i].data, `${ch} event #${i} data`);
        // Compact: re-serialising the parsed value gives the same length (no
        // whitespace added). Key order is not checked: JSON objects are unordered.
        assert.equal(e.data.length, JSON.stringify(payloads[i].data).length, `${ch} event #${i} compact JSON: ${e.data}`);
        const pos = cursorPosition(e.id, ch);
        assert.ok(pos, `id ${e.id} has an entry for ${ch} (hash ${channelHash(ch)})`);
        assert.equal(pos.offset, replies[i][ch], `${ch} event #${i} offset is the publish reply's`);
        assert.equal(parseCursor(e.id).length, 2, "one entry per channel");
      });
    }
    // No line of the raw stream is an injected field.
    assert.ok(!/^(?:event: x|data: fake)$/m.test(sub.raw()), "no injected field line");
  });

  test("heartbeat comment within ~2.5 s on an idle connection", { timeout: TEST_TIMEOUT }, async (t) => {
    const sub = sseCurl(`${h.url}/v1/sse?channel=stream:sse-idle`);
    clients.push(sub);
    assert.equal(await sub.status, 200);
    const started = Date.now();
    const deadline = started + 2500;
    while (sub.comments.length === 0 && Date.now() < deadline) await sleep(25);
    assert.ok(sub.comments.length > 0, `no ':' comment within 2.5 s; got ${JSON.stringify(sub.raw())}`);
    t.diagnostic(`first heartbeat ${sub.comments[0].at - started} ms after the response head`);
    assert.equal(sub.comments[0].text, "", "the heartbeat is a bare ':' line");
    assert.match(sub.raw(), /\n:\n/);
    // And it keeps beating while idle.
    const n = sub.comments.length;
    const deadline2 = Date.now() + 2500;
    while (sub.comments.length === n && Date.now() < deadline2) await sleep(25);
    assert.ok(sub.comments.length > n, "a second heartbeat follows");
    // The only event: herald.cursor, which gave the stream its cursor (docs/protocol.md).
    assert.deepEqual(sub.events.items.map((e) => e.event), ["herald.cursor"], "heartbeats are not events");
  });

  test(
    "the heartbeat goes out --sse-heartbeat seconds after the last write, not up to twice that",
    {
      timeout: TEST_TIMEOUT,
    },
    async () => {
      const sub = sseCurl(`${h.url}/v1/sse?channel=stream:sse-idle-2`);
      clients.push(sub);
      try {
        assert.equal(await sub.status, 200);
        const started = Date.now();
        while (sub.comments.length === 0 && Date.now() - started < 3000) await sleep(25);
        assert.ok(sub.comments.length > 0, "a heartbeat");
        const after = sub.comments[0].at - started;
        assert.ok(after <= 1500, `first heartbeat ${after} ms after the response head (want ~1000)`);
      } finally {
        await sub.close();
      }
    },
  );

  /** Subscribes, receives 3 live events, disconnects, publishes 10. Returns state. */
  async function disconnectAndMiss(channel, missed = 10) {
    const sub = await sseReady(h.url, [channel]);
    clients.push(sub);
    for (let i = 0; i < 3; i++) await publishOk(h.url, { channel, event: "live", data: { i } });
    const live = await eventsAfter(sub, sub.mark, 3);
    const lastId = live[2].id;
    await sub.close();
    const last = cursorPosition(lastId, channel);
    for (let i = 0; i < missed; i++) {
      const r = await publishOk(h.url, { channel, event: "missed", data: { i } });
      assert.equal(r[channel], last.offset + 1 + i);
    }
    return { lastId, last };
  }

  /** Checks a recovered stream: `missed` replayed events, then 3 live ones. */
  async function checkRecovered(sub, channel, last, missed = 10) {
    assert.equal(await sub.status, 200);
    const replayed = await eventsAfter(sub, 0, missed);
    for (let i = 0; i < 3; i++) await publishOk(h.url, { channel, event: "after", data: { i } });
    const all = await eventsAfter(sub, 0, missed + 3);
    await assertNoMoreEvents(sub, missed + 3);
    assert.deepEqual(
      all.map((e) => cursorPosition(e.id, channel).offset),
      Array.from({ length: missed + 3 }, (_, i) => last.offset + 1 + i),
      "offsets: the missed ones then the live ones, no gap, no duplicate",
    );
    for (const e of all) assert.equal(cursorPosition(e.id, channel).epoch, last.epoch);
    assert.deepEqual(
      replayed.map((e) => [e.event, JSON.parse(e.data).i]),
      Array.from({ length: missed }, (_, i) => ["missed", i]),
    );
    assert.deepEqual(
      all.slice(missed).map((e) => [e.event, JSON.parse(e.data).i]),
      [["after", 0], ["after", 1], ["after", 2]],
    );
  }

  test("reconnect with Last-Event-ID header replays exactly the missed events, then live", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:sse-resume-header";
    const { lastId, last } = await disconnectAndMiss(channel);
    const sub = sseCurl(`${h.url}/v1/sse?channel=${channel}`, { "Last-Event-ID": lastId });
    clients.push(sub);
    await checkRecovered(sub, channel, last);
  });

  test("reconnect with ?last_event_id= replays exactly the missed events, then live", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:sse-resume-query";
    const { lastId, last } = await disconnectAndMiss(channel);
    const sub = sseCurl(`${h.url}/v1/sse?channel=${channel}&last_event_id=${encodeURIComponent(lastId)}`);
    clients.push(sub);
    await checkRecovered(sub, channel, last);
  });

  test("Last-Event-ID header wins over ?last_event_id=", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:sse-resume-both";
    const { lastId, last } = await disconnectAndMiss(channel);
    // The query cursor alone would be a gap (offset in the future).
    const future = makeCursor([{ channel, epoch: last.epoch, offset: last.offset + 1000 }]);
    const sub = sseCurl(`${h.url}/v1/sse?channel=${channel}&last_event_id=${future}`, { "Last-Event-ID": lastId });
    clients.push(sub);
    await checkRecovered(sub, channel, last);
  });

  /** Reconnects with `cursor` and expects a herald.gap for `channel` with `reason`, then live. */
  async function expectGap(channel, cursor, reason, liveOffset) {
    const sub = sseCurl(`${h.url}/v1/sse?channel=${channel}`, { "Last-Event-ID": cursor });
    clients.push(sub);
    assert.equal(await sub.status, 200);
    const [gap] = await eventsAfter(sub, 0, 1);
    assert.equal(gap.event, "herald.gap");
    assert.deepEqual(JSON.parse(gap.data), { channel, reason });
    assert.equal(gap.data, JSON.stringify({ channel, reason }));
    // The gap's id is the channel's current position, so resuming from it
    // continues live without another gap.
    assert.equal(cursorPosition(gap.id, channel)?.offset, liveOffset - 1, `gap id ${gap.id}`);
    const r = await publishOk(h.url, { channel, event: "after_gap", data: { ok: 1 } });
    assert.equal(r[channel], liveOffset);
    const [, next] = await eventsAfter(sub, 0, 2);
    assert.equal(next.event, "after_gap");
    assert.equal(cursorPosition(next.id, channel).offset, liveOffset);
    await assertNoMoreEvents(sub, 2);
    await sub.close();
    return gap;
  }

  test("gap epoch_changed: cursor with another epoch", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:sse-gap-epoch";
    const { last } = await disconnectAndMiss(channel, 2);
    const other = last.epoch === "zzzzzzzz" ? "yyyyyyyy" : "zzzzzzzz";
    await expectGap(channel, makeCursor([{ channel, epoch: other, offset: 1 }]), "epoch_changed", last.offset + 3);
  });

  test("gap offset_in_future: cursor ahead of the channel", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:sse-gap-future";
    const { last } = await disconnectAndMiss(channel, 2);
    const cursor = makeCursor([{ channel, epoch: last.epoch, offset: last.offset + 100 }]);
    await expectGap(channel, cursor, "offset_in_future", last.offset + 3);
    // The largest valid offset is a gap too, not a parse error.
    const max = makeCursor([{ channel, epoch: last.epoch, offset: "9007199254740991" }]);
    await expectGap(channel, max, "offset_in_future", last.offset + 4);
  });

  test("one cursor, several channels: recover one, gap another, start a third live", { timeout: TEST_TIMEOUT }, async () => {
    const a = "stream:sse-multi-a";
    const b = "stream:sse-multi-b";
    const c = "stream:sse-multi-c";
    const sub = await sseReady(h.url, [a, b]);
    clients.push(sub);
    const lastId = sub.events.items[sub.mark - 1].id;
    await sub.close();
    const ra = await publishOk(h.url, { channels: [a, b], event: "missed", data: 1 });
    const posA = cursorPosition(lastId, a);
    assert.equal(ra[a], posA.offset + 1);
    const cursor = makeCursor([
      { channel: a, epoch: posA.epoch, offset: posA.offset },
      { channel: b, epoch: "zzzzzzzzzzzz", offset: 5 },
    ]);
    const sub2 = sseCurl(`${h.url}/v1/sse?channel=${a}&channel=${b}&channel=${c}`, { "Last-Event-ID": cursor });
    clients.push(sub2);
    const first = await eventsAfter(sub2, 0, 2);
    const gap = first.find((e) => e.event === "herald.gap");
    const replay = first.find((e) => e.event === "missed");
    assert.ok(gap && replay, `a gap and a replay: ${JSON.stringify(first)}`);
    assert.deepEqual(JSON.parse(gap.data), { channel: b, reason: "epoch_changed" });
    assert.equal(cursorPosition(replay.id, a).offset, ra[a]);
    // c has no entry: it starts live (its subscription may take a moment).
    await probeUntilDelivered(h.url, sub2.events, [c], {
      isProbe: (e, tag) => e.event === "probe" && e.data === JSON.stringify({ probe: tag }),
    });
    const third = sub2.events.items.at(-1);
    assert.ok(sub2.events.items.slice(2).every((e) => e.event === "probe"), "only probes after the gap and the replay");
    assert.equal(parseCursor(third.id).length, 3, "the cursor covers the three channels");
    assert.deepEqual(cursorPosition(third.id, a), { epoch: posA.epoch, offset: ra[a] });
    const n = sub2.events.items.length;
    const rc = await publishOk(h.url, { channel: c, event: "live_c", data: 2 });
    const [live] = await eventsAfter(sub2, n, 1);
    assert.equal(live.event, "live_c");
    assert.equal(cursorPosition(live.id, c).offset, rc[c]);
    await assertNoMoreEvents(sub2, n + 1);
  });

  test("malformed cursors: 400 invalid_cursor, and the server keeps serving", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:sse-bad-cursor";
    const good = await sseReady(h.url, [channel]);
    const pos = cursorPosition(good.events.items[good.mark - 1].id, channel);
    await good.close();
    const hash = channelHash(channel);
    let long = "";
    for (let i = 0; long.length < 5000; i++) long += `${long ? "_" : ""}${(i + 1).toString(16).padStart(8, "0")}-${pos.epoch}-1`;
    const bad = {
      garbage: "garbage",
      "huge offset": `${hash}-${pos.epoch}-99999999999999999999`,
      "offset 2^53": `${hash}-${pos.epoch}-9007199254740992`,
      "negative offset": `${hash}-${pos.epoch}--1`,
      "5000-byte cursor": long,
      "5000 letters": "a".repeat(5000),
      "uppercase hash": `${hash.toUpperCase().replace(/^[0-9]/, "A")}-${pos.epoch}-1`,
      "bad epoch": `${hash}-EPOCH-1`,
      "trailing separator": `${hash}-${pos.epoch}-1_`,
      "duplicate channel": `${hash}-${pos.epoch}-1_${hash}-${pos.epoch}-2`,
      "missing offset": `${hash}-${pos.epoch}-`,
    };
    for (const [name, cursor] of Object.entries(bad)) {
      for (const how of ["header", "query"]) {
        const route =
          how === "header"
            ? `/v1/sse?channel=${channel}`
            : `/v1/sse?channel=${channel}&last_event_id=${encodeURIComponent(cursor)}`;
        const init = how === "header" ? { headers: { "Last-Event-ID": cursor } } : {};
        const r = await getJson(h.url, route, init);
        assert.equal(r.status, 400, `${name} (${how}): status ${r.status} ${r.text.slice(0, 200)}`);
        assert.equal(r.json?.error?.code, "invalid_cursor", `${name} (${how}): ${r.text.slice(0, 200)}`);
        assert.equal(typeof r.json.error.message, "string");
        assert.match(r.headers.get("content-type"), /^application\/json/);
      }
      // A good subscriber is still served after each bad request.
      const ok = await sseReady(h.url, [channel]);
      await ok.close();
    }
  });

  test("SSE request errors: no channel, invalid channel, too many channels", { timeout: TEST_TIMEOUT }, async () => {
    const cases = [
      ["/v1/sse", 400, "invalid_request"],
      ["/v1/sse?channel=foo:1", 400, "invalid_channel"],
      [`/v1/sse?channel=stream:${"a".repeat(129)}`, 400, "invalid_channel"],
      [`/v1/sse?channel=user:${badAccountId(7)}`, 400, "invalid_channel"],
      [`/v1/sse?${Array.from({ length: 65 }, (_, i) => `channel=stream:m${i}`).join("&")}`, 400, "too_many_channels"],
    ];
    for (const [route, status, code] of cases) {
      const r = await getJson(h.url, route);
      assert.equal(r.status, status, `${route.slice(0, 80)}: ${r.text}`);
      assert.equal(r.json?.error?.code, code, `${route.slice(0, 80)}: ${r.text}`);
    }
    // 64 distinct channels plus repeats count once: accepted.
    const many = Array.from({ length: 64 }, (_, i) => `channel=stream:m${i}`).join("&");
    const sub = sseCurl(`${h.url}/v1/sse?${many}&channel=stream:m0&channel=stream:m1`);
    clients.push(sub);
    assert.equal(await sub.status, 200);
    await sub.close();
  });
});

describe("SSE with --history-size=3", () => {
  const { h, clients } = suiteWithClients(["--history-size=3"]);

  test("missing 10 publications gives herald.gap history_expired, then live", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:sse-expired";
    const sub = await sseReady(h.url, [channel]);
    clients.push(sub);
    const lastId = sub.events.items[sub.mark - 1].id;
    const last = cursorPosition(lastId, channel);
    await sub.close();
    for (let i = 0; i < 10; i++) await publishOk(h.url, { channel, event: "missed", data: i });

    const sub2 = sseCurl(`${h.url}/v1/sse?channel=${channel}`, { "Last-Event-ID": lastId });
    clients.push(sub2);
    assert.equal(await sub2.status, 200);
    const [gap] = await eventsAfter(sub2, 0, 1);
    assert.equal(gap.event, "herald.gap");
    assert.equal(gap.data, JSON.stringify({ channel, reason: "history_expired" }));
    const r = await publishOk(h.url, { channel, event: "live", data: "after" });
    assert.equal(r[channel], last.offset + 11);
    const [, live] = await eventsAfter(sub2, 0, 2);
    assert.equal(live.event, "live");
    assert.equal(live.data, '"after"');
    assert.equal(cursorPosition(live.id, channel).offset, last.offset + 11);
    await assertNoMoreEvents(sub2, 2);

    // Missing fewer than the history still recovers.
    await sub2.close();
    for (let i = 0; i < 3; i++) await publishOk(h.url, { channel, event: "missed2", data: i });
    const sub3 = sseCurl(`${h.url}/v1/sse?channel=${channel}`, { "Last-Event-ID": live.id });
    clients.push(sub3);
    const replay = await eventsAfter(sub3, 0, 3);
    assert.deepEqual(
      replay.map((e) => [e.event, cursorPosition(e.id, channel).offset]),
      [0, 1, 2].map((i) => ["missed2", last.offset + 12 + i]),
    );
    await assertNoMoreEvents(sub3, 3);
  });
});

// The end of every stream at shutdown (docs/protocol.md "SSE endings").
const SHUTDOWN_TAIL = /retry: 500\nevent: herald\.shutdown\ndata: \{"reason":"shutdown","retry_ms":500\}\n\n$/;

describe("SSE on shutdown", () => {
  test("SIGTERM sends a retry: 500 hint and a herald.shutdown event, then closes", { timeout: TEST_TIMEOUT }, async () => {
    const h = await startHerald([]);
    let sub;
    try {
      sub = await sseReady(h.url, ["stream:sse-shutdown"]);
      const stopped = h.stop();
      await sub.exited;
      await stopped;
      assert.ok(sub.retries.includes(500), `retry: 500 before the close; got ${JSON.stringify(sub.raw().slice(-200))}`);
      assert.match(sub.raw(), SHUTDOWN_TAIL, "the hint and the shutdown event are the last thing sent");
    } finally {
      await sub?.close();
      await h.stop();
    }
  });
});

describe("SSE on shutdown, keep-alive connections", () => {
  test(
    "a keep-alive connection used after SIGTERM gets no stream that ends without the shutdown hint",
    {
      timeout: TEST_TIMEOUT,
    },
    async () => {
      const h = await startHerald([]);
      const socket = net.connect(h.port, "127.0.0.1");
      try {
        socket.setEncoding("utf8");
        socket.on("error", () => {});
        let out = "";
        socket.on("data", (d) => (out += d));
        const closed = new Promise((resolve) => socket.once("close", resolve));
        await new Promise((resolve) => socket.once("connect", resolve));
        socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        const deadline = Date.now() + 2000;
        while (!out.includes('"status":"ok"') && Date.now() < deadline) await sleep(10);
        assert.match(out, /"status":"ok"/);
        const head = out.length;
        const stopped = h.stop();
        // Used after SIGTERM: wait until herald is shutting down (/readyz no longer 200).
        await waitUntil(async () => (await fetch(`${h.url}/readyz`).then((r) => r.status, () => 0)) !== 200, {
          timeoutMs: 5000,
          what: "herald shutting down (/readyz not 200)",
        });
        if (!socket.destroyed) socket.write("GET /v1/sse?channel=stream:sse-keepalive HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        await closed;
        await stopped;
        const after = out.slice(head);
        if (after.includes("text/event-stream")) {
          assert.match(after, SHUTDOWN_TAIL, `a stream opened during shutdown ended with ${JSON.stringify(after.slice(-60))}`);
        }
      } finally {
        socket.destroy();
        await h.stop();
      }
    },
  );
});
