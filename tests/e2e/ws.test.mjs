// WebSocket subscriptions (GET /v1/ws) against real herald processes: the
// JSON protocol with the `ws` package, recovery with `since`, every documented
// command error, and close codes for framing violations (the `ws` package
// where it can send the frame, a raw node:net client where it cannot).
// See docs/protocol.md.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { encodeAccountId } from "../../demo/strkey.mjs";
import { awaitBackgroundStops, badAccountId, getJson, publishOk, sleep, startHerald, suiteHerald } from "./lib/herald.mjs";
import { deltaDecoder } from "./lib/centrifuge.mjs";
import { publicationsOf, rawWsConnect, wsConnect, wsStillReceives, wsSubscribe } from "./lib/ws.mjs";

const USER = encodeAccountId(Uint8Array.from({ length: 32 }, (_, i) => (i * 13 + 1) & 0xff));
const TEST_TIMEOUT = 20_000;
const MAX_MESSAGE = 1024;

/** A user channel whose address has a wrong checksum. */
const badChecksumUser = () => `user:${badAccountId(5)}`;

// Herald processes stopped in the background by the suites: wait for them.
after(() => awaitBackgroundStops());

/**
 * The herald of a describe block (`args`) and `open()`, which connects a new
 * /v1/ws client (wsConnect); every client opened so is closed (if it is
 * not already) before herald stops.
 * @param {string[]} args herald flags
 * @returns {{h: object, open: () => Promise<object>}} `h` the suiteHerald() handle
 */
function suiteWithClients(args) {
  const clients = [];
  const h = suiteHerald(args, {
    beforeStop: async () => {
      await Promise.all(clients.map((c) => c.close().catch(() => {})));
    },
  });
  const open = async () => {
    const c = await wsConnect(h.url);
    clients.push(c);
    return c;
  };
  return { h, open };
}

describe("WebSocket protocol", () => {
  let watcher; // a client subscribed to WATCH that must keep receiving
  const WATCH = "stream:ws-watch";
  const { h, open } = suiteWithClients(["--max-channels-per-client=2", `--max-ws-message-bytes=${MAX_MESSAGE}`, "--history-size=8"]);

  /**
   * A new client that sends `subscribe` and `unsubscribe` for `channel` 20
   * times back to back (ids s0..s19 and u0..u19) and has the reply to u19;
   * returns the client.
   */
  const subscribeUnsubscribe20 = async (channel) => {
    const c = await open();
    for (let i = 0; i < 20; i++) {
      c.send({ op: "subscribe", id: `s${i}`, channel });
      c.send({ op: "unsubscribe", id: `u${i}`, channel });
    }
    await c.inbox.until((items) => items.some((m) => m.id === "u19"), { what: "the last unsubscribed" });
    return c;
  };

  before(async () => {
    watcher = await open();
    const r = await wsSubscribe(watcher, WATCH, { id: "watch" });
    assert.equal(r.op, "subscribed");
  });

  test("subscribe, subscribed shape, publications shape", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:ws-shape";
    const c = await open();
    const sub = await wsSubscribe(c, channel, { id: 1 });
    assert.match(sub.epoch, /^[a-z0-9]{1,32}$/);
    assert.deepEqual(sub, { op: "subscribed", id: 1, channel, epoch: sub.epoch, offset: 0, recovered: false });

    const user = `user:${USER}`;
    const subUser = await wsSubscribe(c, user, { id: "u-1" });
    assert.deepEqual(subUser, {
      op: "subscribed",
      id: "u-1",
      channel: user,
      epoch: subUser.epoch,
      offset: 0,
      recovered: false,
    });

    const from = c.inbox.items.length;
    const data = [{ amount: "12.5000000", nested: { a: [1, { b: null }] } }, "text\nwith \"quotes\" é 🚀", 42, null, [true, false]];
    for (const [i, d] of data.entries()) {
      const r = await publishOk(h.url, { channels: [channel, user], event: `ev_${i}`, data: d });
      assert.deepEqual(r, { [channel]: i + 1, [user]: i + 1 });
    }
    await c.inbox.until((items) => items.length >= from + 10, { what: "10 publications" });
    for (const ch of [channel, user]) {
      const pubs = publicationsOf(c, ch, from);
      assert.deepEqual(
        pubs,
        data.map((d, i) => ({ op: "publication", channel: ch, offset: i + 1, event: `ev_${i}`, data: d })),
      );
    }

    // Another client subscribing now sees the same epoch and the latest offset.
    const c2 = await open();
    const sub2 = await wsSubscribe(c2, channel, { id: 2 });
    assert.deepEqual(sub2, { op: "subscribed", id: 2, channel, epoch: sub.epoch, offset: 5, recovered: false });
    await c.close();
    await c2.close();
  });

  test("unsubscribe: unsubscribed, then nothing more for that channel", { timeout: TEST_TIMEOUT }, async () => {
    const a = "stream:ws-unsub-a";
    const b = "stream:ws-unsub-b";
    const c = await open();
    await wsSubscribe(c, a, { id: 1 });
    await wsSubscribe(c, b, { id: 2 });
    const reply = await c.request({ op: "unsubscribe", id: 3, channel: a });
    assert.deepEqual(reply, { op: "unsubscribed", id: 3, channel: a });
    const from = c.inbox.items.length;
    await publishOk(h.url, { channel: a, event: "gone", data: 1 });
    await publishOk(h.url, { channels: [a, b], event: "both", data: 2 });
    await c.inbox.until((items) => items.slice(from).some((m) => m.channel === b), { what: "the b publication" });
    await sleep(300);
    assert.deepEqual(publicationsOf(c, a, from), [], "nothing for the unsubscribed channel");
    assert.deepEqual(
      c.inbox.items.slice(from).map((m) => [m.op, m.channel, m.event]),
      [["publication", b, "both"]],
    );
    // Subscribing again works, from the current offset.
    const again = await wsSubscribe(c, a, { id: 4 });
    assert.equal(again.op, "subscribed");
    assert.equal(again.offset, 2);
    await c.close();
  });

  test("subscribe and unsubscribe sent back to back: the channel ends unsubscribed, nothing is delivered", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:ws-race";
    const c = await subscribeUnsubscribe20(channel);
    for (let i = 0; i < 20; i++) {
      const u = c.inbox.items.find((m) => m.id === `u${i}`);
      assert.deepEqual(u, { op: "unsubscribed", id: `u${i}`, channel }, `reply to u${i}`);
    }
    await publishOk(h.url, { channel, event: "late", data: 1 });
    const r = await c.request({ op: "unsubscribe", id: "again", channel });
    assert.equal(r.code, "not_subscribed", JSON.stringify(r));
    await sleep(200);
    assert.deepEqual(publicationsOf(c, channel), [], "nothing delivered after the last unsubscribe");
    await c.close();
  });

  test(
    "subscribe and unsubscribe sent back to back: every subscribe gets a reply (subscribed, or error cancelled), before the unsubscribed",
    {
      timeout: TEST_TIMEOUT,
    },
    async () => {
      const c = await subscribeUnsubscribe20("stream:ws-race-2");
      try {
        await sleep(200);
        const ids = c.inbox.items.map((m) => m.id);
        for (let i = 0; i < 20; i++) {
          const s = ids.indexOf(`s${i}`);
          assert.ok(s >= 0, `no reply to subscribe s${i}; replies: ${ids.join(" ")}`);
          assert.ok(s < ids.indexOf(`u${i}`), `s${i} answered after u${i}`);
          const reply = c.inbox.items[s];
          assert.ok(
            reply.op === "subscribed" || (reply.op === "error" && reply.code === "cancelled"),
            `reply to s${i}: ${JSON.stringify(reply)}`,
          );
        }
      } finally {
        await c.close();
      }
    },
  );

  test(
    "subscribe (since A), unsubscribe, subscribe (since B) back to back: the replay follows B, without gap",
    {
      timeout: TEST_TIMEOUT,
    },
    async () => {
      const channel = "stream:ws-race-since";
      const keep = await open();
      const sub = await wsSubscribe(keep, channel);
      for (let i = 0; i < 10; i++) await publishOk(h.url, { channel, event: "e", data: i });
      const failures = [];
      for (let trial = 0; trial < 20; trial++) {
        const c = await open();
        c.send({ op: "subscribe", id: "a", channel, since: { epoch: sub.epoch, offset: 8 } });
        c.send({ op: "unsubscribe", id: "b", channel });
        c.send({ op: "subscribe", id: "c", channel, since: { epoch: sub.epoch, offset: 2 } });
        await c.inbox.until((items) => items.some((m) => m.id === "c"), { what: "the reply to c" });
        // The replay ends at offset 10; a wrong one (wrong start, gap) is
        // reported below with what came. Then a moment for anything extra.
        const after = (items) => items.slice(items.findIndex((m) => m.id === "c") + 1);
        await c.inbox
          .until((items) => after(items).some((m) => m.op === "publication" && m.offset === 10), { timeoutMs: 3000, what: "offset 10 after c" })
          .catch(() => {});
        await sleep(50);
        const items = c.inbox.items;
        const afterC = items.slice(items.findIndex((m) => m.id === "c") + 1);
        const got = afterC.map((m) => (m.op === "publication" ? m.offset : m.op));
        if (JSON.stringify(got) !== JSON.stringify([3, 4, 5, 6, 7, 8, 9, 10])) {
          failures.push(`trial ${trial}: after subscribed c got ${JSON.stringify(got)}`);
        }
        await c.close();
      }
      assert.deepEqual(failures, []);
    },
  );

  test("ping/pong echoes the id", { timeout: TEST_TIMEOUT }, async () => {
    const c = await open();
    assert.deepEqual(await c.request({ op: "ping", id: 3 }), { op: "pong", id: 3 });
    assert.deepEqual(await c.request({ op: "ping", id: "abc" }), { op: "pong", id: "abc" });
    const long = "x".repeat(64);
    assert.deepEqual(await c.request({ op: "ping", id: long }), { op: "pong", id: long });
    assert.deepEqual(await c.request({ op: "ping", id: 0 }), { op: "pong", id: 0 });
    // 64-bit extremes come back exactly as sent (compared as text: JSON.parse would round them).
    const texts = [];
    c.ws.prependListener("message", (data) => texts.push(data.toString("utf8"))); // before the inbox wakes
    for (const id of ["-9223372036854775808", "18446744073709551615"]) {
      c.send(`{"op":"ping","id":${id}}`);
      await c.inbox.until(() => texts.some((t) => t === `{"id":${id},"op":"pong"}`), { what: `pong ${id}` });
    }
    const from = c.inbox.items.length;
    c.send({ op: "ping" });
    const [pong] = await c.inbox.until((items) => items.length > from && items.slice(from), { what: "pong" });
    assert.deepEqual(pong, { op: "pong" });
    await c.close();
  });

  test("connect with authentication off (--insecure): sub and expires_at are present and null", { timeout: TEST_TIMEOUT }, async () => {
    const c = await open();
    assert.deepEqual(await c.request({ op: "connect", id: 1, token: "anything" }), { op: "connected", id: 1, sub: null, expires_at: null });
    assert.deepEqual(await c.request({ op: "refresh", id: 2, token: "anything" }), { op: "refreshed", id: 2, sub: null, expires_at: null });
    await c.close();
  });

  test("since in the same epoch: recovered true, replay in order, then live, no duplicate", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:ws-recover";
    const c1 = await open();
    const sub1 = await wsSubscribe(c1, channel, { id: 1 });
    for (let i = 0; i < 3; i++) await publishOk(h.url, { channel, event: "seen", data: { i } });
    await c1.inbox.until((items) => publicationsOf(c1, channel).length === 3, { what: "3 publications" });
    const last = publicationsOf(c1, channel).at(-1).offset;
    // c1 stays subscribed (the channel keeps its epoch); a second client recovers.
    for (let i = 0; i < 5; i++) await publishOk(h.url, { channel, event: "missed", data: { i } });

    const c2 = await open();
    const sub2 = await wsSubscribe(c2, channel, { id: 7, since: { epoch: sub1.epoch, offset: last } });
    assert.deepEqual(sub2, { op: "subscribed", id: 7, channel, epoch: sub1.epoch, offset: last + 5, recovered: true });
    for (let i = 0; i < 2; i++) await publishOk(h.url, { channel, event: "live", data: { i } });
    await c2.inbox.until((items) => publicationsOf(c2, channel).length >= 7, { what: "7 publications" });
    await sleep(200);
    const pubs = publicationsOf(c2, channel);
    assert.deepEqual(
      pubs.map((p) => [p.offset, p.event, p.data.i]),
      [
        ...[0, 1, 2, 3, 4].map((i) => [last + 1 + i, "missed", i]),
        [last + 6, "live", 0],
        [last + 7, "live", 1],
      ],
    );
    const idx = c2.inbox.items.indexOf(sub2);
    assert.ok(
      c2.inbox.items.slice(0, idx).every((m) => m.op !== "publication"),
      "replayed publications follow the subscribed message",
    );

    // since == current offset: recovered, nothing to replay.
    const c3 = await open();
    const sub3 = await wsSubscribe(c3, channel, { id: 8, since: { epoch: sub1.epoch, offset: last + 7 } });
    assert.deepEqual(sub3, { op: "subscribed", id: 8, channel, epoch: sub1.epoch, offset: last + 7, recovered: true });
    // A live publication as the marker: it is the first thing c3 gets (nothing replayed before it).
    await publishOk(h.url, { channel, event: "marker", data: { i: 0 } });
    await c3.inbox.until(() => publicationsOf(c3, channel).length >= 1, { what: "the marker publication" });
    assert.deepEqual(publicationsOf(c3, channel).map((p) => [p.offset, p.event]), [[last + 8, "marker"]]);
    await Promise.all([c1.close(), c2.close(), c3.close()]);
  });

  /** Subscribes with `since` and expects recovered false with `reason`, then live from N. */
  async function expectNotRecovered(channel, since, reason, current, epoch) {
    const c = await open();
    const sub = await wsSubscribe(c, channel, { id: "r", since });
    assert.deepEqual(sub, { op: "subscribed", id: "r", channel, epoch, offset: current, recovered: false, reason });
    await publishOk(h.url, { channel, event: "live", data: "x" });
    await c.inbox.until((items) => publicationsOf(c, channel).length >= 1, { what: "a live publication" });
    await sleep(200);
    assert.deepEqual(publicationsOf(c, channel), [
      { op: "publication", channel, offset: current + 1, event: "live", data: "x" },
    ]);
    await c.close();
  }

  /**
   * A client kept subscribed to `channel` while `n` publications (data 1..n)
   * are made on it: the channel exists with an epoch and offset n.
   * @returns {Promise<{keep: object, epoch: string}>} the client (close it) and the channel's epoch
   */
  async function keptChannel(channel, n) {
    const keep = await open();
    const sub = await wsSubscribe(keep, channel);
    for (let i = 1; i <= n; i++) await publishOk(h.url, { channel, event: "e", data: i });
    return { keep, epoch: sub.epoch };
  }

  test("since with another epoch: recovered false, reason epoch_changed, live from N", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:ws-epoch";
    const { keep, epoch } = await keptChannel(channel, 1);
    const other = epoch === "zzzzzzzz" ? "yyyyyyyy" : "zzzzzzzz";
    await expectNotRecovered(channel, { epoch: other, offset: 1 }, "epoch_changed", 1, epoch);
    await keep.close();
  });

  test("since with a future offset: recovered false, reason offset_in_future", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:ws-future";
    const { keep, epoch } = await keptChannel(channel, 1);
    await expectNotRecovered(channel, { epoch, offset: 50 }, "offset_in_future", 1, epoch);
    await expectNotRecovered(channel, { epoch, offset: 2 ** 53 - 1 }, "offset_in_future", 2, epoch);
    await keep.close();
  });

  test("since past the history (--history-size=8): recovered false, reason history_expired", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:ws-expired";
    const { keep, epoch } = await keptChannel(channel, 20);
    await expectNotRecovered(channel, { epoch, offset: 2 }, "history_expired", 20, epoch);
    // The last 8 are still recoverable.
    const c = await open();
    const ok = await wsSubscribe(c, channel, { since: { epoch, offset: 13 } });
    assert.equal(ok.recovered, true);
    await c.inbox.until(() => publicationsOf(c, channel).length >= 8, { what: "8 replayed" });
    assert.deepEqual(
      publicationsOf(c, channel).map((p) => p.offset),
      [14, 15, 16, 17, 18, 19, 20, 21],
    );
    await Promise.all([keep.close(), c.close()]);
  });

  test("every bad command gets its error, and the connection keeps receiving", { timeout: TEST_TIMEOUT }, async () => {
    const home = "stream:ws-bad-home";
    const c = await open();
    await wsSubscribe(c, home, { id: "home" });
    const cases = [
      // [name, message (string sent as is), expected error (without message)]
      ["invalid JSON", '{"op":"ping",', { op: "error", code: "invalid_json" }],
      ["JSON array", '[{"op":"ping","id":1}]', { op: "error", code: "invalid_json" }],
      ["JSON string", '"ping"', { op: "error", code: "invalid_json" }],
      ["empty text", "", { op: "error", code: "invalid_json" }],
      ["nested 500 deep", `{"op":"ping","x":${"[".repeat(500)}${"]".repeat(500)}}`, { op: "error", code: "invalid_json" }],
      ["unknown op", { op: "dance", id: 5 }, { op: "error", id: 5, code: "unknown_op" }],
      ["missing op", { id: 6 }, { op: "error", id: 6, code: "invalid_request" }],
      ["op not a string", { op: 1, id: "6b" }, { op: "error", id: "6b", code: "invalid_request" }],
      // Numbers that are not exact 64-bit integers (was: echoed altered, as -9.999999999999999e+22).
      ["id below -2^63", '{"op":"ping","id":-99999999999999999999999}', { op: "error", code: "invalid_request" }],
      ["id -2^63-1", '{"op":"ping","id":-9223372036854775809}', { op: "error", code: "invalid_request" }],
      ["id a fraction", { op: "ping", id: 1.5 }, { op: "error", code: "invalid_request" }],
      ["missing channel", { op: "subscribe", id: 7 }, { op: "error", id: 7, code: "invalid_request" }],
      ["channel not a string", { op: "subscribe", id: 8, channel: 42 }, { op: "error", id: 8, code: "invalid_request" }],
      ["id too long", { op: "ping", id: "x".repeat(65) }, { op: "error", code: "invalid_request" }],
      ["id an object", { op: "ping", id: { a: 1 } }, { op: "error", code: "invalid_request" }],
      [
        "stream: with 129 characters",
        { op: "subscribe", id: 9, channel: `stream:${"a".repeat(129)}` },
        { op: "error", id: 9, code: "invalid_channel", channel: `stream:${"a".repeat(129)}` },
      ],
      [
        "user: with a bad checksum",
        { op: "subscribe", id: 10, channel: badChecksumUser() },
        { op: "error", id: 10, code: "invalid_channel", channel: badChecksumUser() },
      ],
      ["foo:1", { op: "subscribe", id: 11, channel: "foo:1" }, { op: "error", id: 11, code: "invalid_channel", channel: "foo:1" }],
      ["empty stream id", { op: "subscribe", id: 12, channel: "stream:" }, { op: "error", id: 12, code: "invalid_channel", channel: "stream:" }],
      [
        "unsubscribe an invalid channel",
        { op: "unsubscribe", id: 13, channel: "stream:a b" },
        { op: "error", id: 13, code: "invalid_channel", channel: "stream:a b" },
      ],
      ...[
        ["since epoch uppercase", { epoch: "ABC", offset: 1 }],
        ["since epoch too long", { epoch: "a".repeat(33), offset: 1 }],
        ["since epoch empty", { epoch: "", offset: 1 }],
        ["since negative offset", { epoch: "abc", offset: -1 }],
        ["since offset 2^53", { epoch: "abc", offset: 2 ** 53 }],
        ["since fractional offset", { epoch: "abc", offset: 1.5 }],
        ["since offset string", { epoch: "abc", offset: "1" }],
        ["since missing offset", { epoch: "abc" }],
        ["since not an object", 5],
      ].map(([name, since], i) => [
        name,
        { op: "subscribe", id: 100 + i, channel: "stream:ws-since", since },
        { op: "error", id: 100 + i, code: "invalid_since", channel: "stream:ws-since" },
      ]),
      // Unknown fields are refused by name (was: ignored, so "sinse" subscribed without recovery).
      [
        "a misspelled since",
        { op: "subscribe", id: 16, channel: "stream:ws-typo", sinse: { epoch: "abc", offset: 1 } },
        { op: "error", id: 16, code: "invalid_request" },
      ],
      [
        "an unknown field in since",
        { op: "subscribe", id: 17, channel: "stream:ws-typo", since: { epoch: "abc", offset: 1, ofset: 2 } },
        { op: "error", id: 17, code: "invalid_request" },
      ],
      ["an unknown field on ping", { op: "ping", id: 18, foo: true }, { op: "error", id: 18, code: "invalid_request" }],
      [
        "already_subscribed",
        { op: "subscribe", id: 14, channel: home },
        { op: "error", id: 14, code: "already_subscribed", channel: home },
      ],
      [
        "not_subscribed",
        { op: "unsubscribe", id: 15, channel: "stream:ws-never" },
        { op: "error", id: 15, code: "not_subscribed", channel: "stream:ws-never" },
      ],
    ];
    for (const [name, msg, expected] of cases) {
      const from = c.inbox.items.length;
      c.send(typeof msg === "string" ? msg : JSON.stringify(msg));
      const [reply] = await c.inbox.until(
        (items) => items.slice(from).filter((m) => m.op !== "publication").length >= 1 &&
          items.slice(from).filter((m) => m.op !== "publication"),
        { what: `the reply to ${name}` },
      );
      assert.equal(typeof reply.message, "string", `${name}: message is a string`);
      const { message, ...rest } = reply;
      assert.deepEqual(rest, expected, `${name}: ${JSON.stringify(reply)}`);
      assert.equal(c.ws.readyState, 1, `${name}: the connection stays open`);
      await wsStillReceives(h.url, c, home);
    }

    // too_many_channels (--max-channels-per-client=2): the 2nd is fine, the 3rd is refused.
    const second = await wsSubscribe(c, "stream:ws-bad-second", { id: 20 });
    assert.equal(second.op, "subscribed");
    const third = await wsSubscribe(c, "stream:ws-bad-third", { id: 21 });
    const { message, ...rest } = third;
    assert.equal(typeof message, "string");
    assert.deepEqual(rest, { op: "error", id: 21, code: "too_many_channels", channel: "stream:ws-bad-third" });
    await wsStillReceives(h.url, c, home);
    await wsStillReceives(h.url, c, "stream:ws-bad-second");
    await c.close();
  });

  test(
    "errors about a named channel carry that channel (invalid_channel, invalid_since)",
    {
      timeout: TEST_TIMEOUT,
    },
    async () => {
      const c = await open();
      const bad = "foo:1";
      const r1 = await c.request({ op: "subscribe", id: 1, channel: bad });
      assert.equal(r1.code, "invalid_channel");
      const r2 = await c.request({ op: "subscribe", id: 2, channel: "stream:ws-since", since: { epoch: "ABC", offset: 1 } });
      assert.equal(r2.code, "invalid_since");
      try {
        assert.equal(r1.channel, bad, JSON.stringify(r1));
        assert.equal(r2.channel, "stream:ws-since", JSON.stringify(r2));
      } finally {
        await c.close();
      }
    },
  );

  /** After a connection was closed for a violation, the server still serves others. */
  async function othersStillServed() {
    await wsStillReceives(h.url, watcher, WATCH);
    const health = await getJson(h.url, "/healthz");
    assert.equal(health.status, 200);
  }

  test("binary message: close 1003", { timeout: TEST_TIMEOUT }, async () => {
    const c = await open();
    c.ws.send(Buffer.from('{"op":"ping","id":1}'), { binary: true });
    const { code } = await c.closed;
    assert.equal(code, 1003);
    await othersStillServed();
  });

  test(`message over --max-ws-message-bytes=${MAX_MESSAGE}: close 1009`, { timeout: TEST_TIMEOUT }, async () => {
    const c = await open();
    c.send(JSON.stringify({ op: "ping", id: 1, pad: "x".repeat(2000) }));
    const { code } = await c.closed;
    assert.equal(code, 1009);
    await othersStillServed();
    // A message just under the limit is fine.
    const ok = await open();
    // Padded with JSON whitespace (a field the command does not have is refused).
    const head = '{"op":"ping","id":2';
    const text = head + " ".repeat(MAX_MESSAGE - head.length - 1) + "}";
    assert.equal(text.length, MAX_MESSAGE);
    const from = ok.inbox.items.length;
    ok.send(text);
    const reply = await ok.inbox.until((items) => items.slice(from).find((m) => m.id === 2), { what: "pong" });
    assert.deepEqual(reply, { op: "pong", id: 2 });
    await ok.close();
  });

  test("fragmented message over the limit: close 1009", { timeout: TEST_TIMEOUT }, async () => {
    const c = await open();
    const chunk = "x".repeat(400);
    c.ws.send('{"op":"ping","id":1,"pad":"', { fin: false });
    for (let i = 0; i < 4; i++) c.ws.send(chunk, { fin: false });
    c.ws.send('"}', { fin: true });
    const { code } = await c.closed;
    assert.equal(code, 1009);
    await othersStillServed();
    // Fragments under the limit form one message.
    const ok = await open();
    ok.ws.send('{"op":"ping",', { fin: false });
    ok.ws.send('"id":', { fin: false });
    ok.ws.send("77}", { fin: true });
    await ok.inbox.until((items) => items.some((m) => m.op === "pong" && m.id === 77), { what: "pong 77" });
    await ok.close();
  });

  // ------------------------------------------------------------ raw frames

  const rawClients = [];
  after(() => rawClients.forEach((r) => r.destroy()));
  async function raw() {
    const r = await rawWsConnect(h.port);
    rawClients.push(r);
    return r;
  }

  test("raw client: a masked text ping gets a pong (the raw client itself works)", { timeout: TEST_TIMEOUT }, async () => {
    const r = await raw();
    r.sendJson({ op: "ping", id: 1 });
    await r.frames.until((f) => f.some((x) => x.json?.op === "pong"), { what: "pong" });
    assert.deepEqual(r.messages(), [{ op: "pong", id: 1 }]);
    // A client close frame gets a close frame back with the same code.
    r.sendFrame({ opcode: 8, payload: Buffer.from([0x03, 0xe8]) });
    const { code } = await r.closeCode();
    assert.equal(code, 1000);
    await r.ended;
  });

  const violations = [
    ["invalid UTF-8 text", 1007, { opcode: 1, payload: Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d]) }],
    ["invalid UTF-8 text (overlong encoding)", 1007, { opcode: 1, payload: Buffer.from([0x22, 0xc0, 0xaf, 0x22]) }],
    ["invalid UTF-8 text (surrogate)", 1007, { opcode: 1, payload: Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22]) }],
    ["unmasked client frame", 1002, { opcode: 1, payload: '{"op":"ping"}', mask: false }],
    ["reserved bit RSV1 set", 1002, { opcode: 1, rsv: 4, payload: '{"op":"ping"}' }],
    ["reserved bit RSV3 set", 1002, { opcode: 1, rsv: 1, payload: '{"op":"ping"}' }],
    ["unknown opcode 0x3", 1002, { opcode: 3, payload: "x" }],
    ["unknown control opcode 0xB", 1002, { opcode: 0xb, payload: "" }],
    ["ping with a 126-byte payload", 1002, { opcode: 9, payload: Buffer.alloc(126, 0x61) }],
    ["fragmented ping", 1002, { opcode: 9, fin: false, payload: "x" }],
    ["continuation without a start", 1002, { opcode: 0, payload: "x" }],
  ];
  for (const [name, expected, frame] of violations) {
    test(`raw client: ${name}: close ${expected}`, { timeout: TEST_TIMEOUT }, async () => {
      const r = await raw();
      r.sendFrame(frame);
      const { code, ended } = await r.closeCode();
      assert.equal(code, expected, `close code (connection ${ended})`);
      await r.ended;
      await othersStillServed();
    });
  }

  test("raw client: a frame header declaring 2^62 bytes: close 1009, no allocation", { timeout: TEST_TIMEOUT }, async () => {
    const rssBefore = h.rssKb();
    const r = await raw();
    r.sendFrame({ opcode: 1, payload: Buffer.from("{}"), declaredLength: 2n ** 62n });
    const { code } = await r.closeCode();
    assert.equal(code, 1009);
    // Right after, the server answers, and did not try to allocate the message.
    const health = await getJson(h.url, "/healthz");
    assert.equal(health.status, 200);
    assert.equal(health.json.status, "ok");
    assert.ok(h.rssKb() < rssBefore + 50 * 1024, `RSS grew from ${rssBefore} to ${h.rssKb()} KiB`);
    await othersStillServed();
  });

  test("raw client: a 2^63+ length (most significant bit set): close 1002", { timeout: TEST_TIMEOUT }, async () => {
    const r = await raw();
    r.sendFrame({ opcode: 1, payload: Buffer.from("{}"), declaredLength: 2n ** 63n + 5n });
    const { code } = await r.closeCode();
    assert.ok(code === 1002 || code === 1009, `close ${code}`);
    await othersStillServed();
  });
});

describe("WebSocket delta compression (subscribe with delta: \"fossil\")", () => {
  const h = suiteHerald(["--history-size=100"]);

  /** A ~1.5 KiB state with one field changed per step. */
  const state = (i) => ({
    ledger: 1000 + i,
    balances: Object.fromEntries([...Array(20).keys()].map((k) => [`asset${k}`, (k === i % 20 ? 100 + i : 100).toFixed(7)])),
    memo: "café \u2028 ✓",
  });

  test("deltas decode to the published data with the SDK's decoder; full after the reply and first in a recovery; a plain subscriber gets JSON values", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:ws-delta";
    const c = await wsConnect(h.url);
    const plain = await wsConnect(h.url);
    try {
      const sub = await c.request({ op: "subscribe", channel, delta: "fossil" });
      assert.equal(sub.op, "subscribed");
      assert.equal(sub.delta, true);
      const plainSub = await wsSubscribe(plain, channel);
      assert.equal(plainSub.delta, undefined);
      const sent = [];
      for (let i = 0; i < 30; i++) {
        sent.push(state(i));
        await publishOk(h.url, { channel, event: "balance", data: state(i) });
      }
      await c.inbox.until((items) => publicationsOf({ inbox: { items } }, channel).length >= 30, { what: "30 publications" });
      await plain.inbox.until((items) => publicationsOf({ inbox: { items } }, channel).length >= 30, { what: "30 plain" });
      const msgs = publicationsOf(c, channel);
      const dec = deltaDecoder();
      assert.deepEqual(msgs.map((m) => dec.decode(m)), sent);
      assert.equal(dec.stats.full, 1);
      assert.equal(dec.stats.deltas, 29);
      assert.ok(dec.stats.bytesReceived < 0.15 * dec.stats.bytesDecoded, JSON.stringify(dec.stats));
      assert.equal(typeof msgs[0].data, "string");
      assert.equal(msgs[1].delta, true);
      // The plain subscriber: today's messages, data as a JSON value.
      assert.deepEqual(publicationsOf(plain, channel).map((m) => m.data), sent);

      // A new connection recovers from offset 10: the first replayed is full, then deltas.
      const again = await wsConnect(h.url);
      try {
        const r = await again.request({ op: "subscribe", channel, delta: "fossil", since: { epoch: sub.epoch, offset: 10 } });
        assert.equal(r.recovered, true);
        await again.inbox.until((items) => publicationsOf({ inbox: { items } }, channel).length >= 20, { what: "20 replayed" });
        const replay = publicationsOf(again, channel);
        const dec2 = deltaDecoder();
        assert.deepEqual(replay.map((m) => dec2.decode(m)), sent.slice(10));
        assert.equal(dec2.stats.full, 1);
        assert.equal(replay[0].offset, 11);
      } finally {
        await again.close();
      }
    } finally {
      await c.close();
      await plain.close();
    }
  });

  test("a delta other than \"fossil\" is refused with invalid_request; the connection stays", { timeout: TEST_TIMEOUT }, async () => {
    const c = await wsConnect(h.url);
    try {
      for (const delta of ["zstd", true, ""]) {
        const r = await c.request({ op: "subscribe", channel: "stream:ws-delta-bad", delta });
        assert.equal(r.op, "error");
        assert.equal(r.code, "invalid_request");
        assert.match(r.message, /fossil/);
      }
      const ok = await wsSubscribe(c, "stream:ws-delta-bad");
      assert.equal(ok.op, "subscribed");
    } finally {
      await c.close();
    }
  });
});

describe("history TTL (--history-ttl=1)", () => {
  const { h, open } = suiteWithClients(["--history-ttl=1"]);

  test("an idle channel gets a new epoch: since the old one gives epoch_changed", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:ws-ttl-idle";
    const c1 = await open();
    const s1 = await wsSubscribe(c1, channel);
    await publishOk(h.url, { channel, event: "e", data: 1 });
    await c1.close(); // no subscriber; the history expires after 1 s
    await sleep(2500);
    const c2 = await open();
    const s2 = await wsSubscribe(c2, channel, { id: 1, since: { epoch: s1.epoch, offset: 1 } });
    assert.notEqual(s2.epoch, s1.epoch, "a new epoch");
    assert.deepEqual(s2, { op: "subscribed", id: 1, channel, epoch: s2.epoch, offset: 0, recovered: false, reason: "epoch_changed" });
  });

  test("publications older than the TTL leave the history: history_expired", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:ws-ttl-aged";
    const keep = await open();
    const s = await wsSubscribe(keep, channel);
    await publishOk(h.url, { channel, event: "old", data: 1 });
    await sleep(2500);
    await publishOk(h.url, { channel, event: "new", data: 2 });
    const c = await open();
    const missedOld = await wsSubscribe(c, channel, { id: 1, since: { epoch: s.epoch, offset: 0 } });
    assert.deepEqual(missedOld, {
      op: "subscribed",
      id: 1,
      channel,
      epoch: s.epoch,
      offset: 2,
      recovered: false,
      reason: "history_expired",
    });
    // Only the fresh one is still recoverable.
    const c2 = await open();
    const ok = await wsSubscribe(c2, channel, { id: 2, since: { epoch: s.epoch, offset: 1 } });
    assert.equal(ok.recovered, true);
    await c2.inbox.until(() => publicationsOf(c2, channel).length >= 1, { what: "the replay" });
    assert.deepEqual(publicationsOf(c2, channel), [{ op: "publication", channel, offset: 2, event: "new", data: 2 }]);
  });
});

describe("WebSocket server heartbeat (--ws-ping-interval=1 --ws-pong-timeout=1)", () => {
  const closers = [];
  const h = suiteHerald(["--ws-ping-interval=1", "--ws-pong-timeout=1"], {
    beforeStop: async () => {
      await Promise.all(closers.map((f) => f()));
    },
  });

  test("a client that never answers pings is closed; one that does stays", { timeout: TEST_TIMEOUT }, async () => {
    const good = await wsConnect(h.url);
    closers.push(() => good.close());
    await wsSubscribe(good, "stream:ws-hb");
    const mute = await rawWsConnect(h.port);
    closers.push(async () => mute.destroy());
    const started = Date.now();
    await mute.frames.until((f) => f.some((x) => x.opcode === 9), { timeoutMs: 3000, what: "a server ping" });
    await Promise.race([mute.ended, sleep(6000)]);
    const elapsed = Date.now() - started;
    assert.ok(mute.frames.closed, `the mute client is closed (after ${elapsed} ms)`);
    assert.ok(elapsed < 5000, `closed after ${elapsed} ms`);
    assert.equal(good.ws.readyState, 1, "the ws package answers pings and stays open");
    await wsStillReceives(h.url, good, "stream:ws-hb");
  });
});

describe("WebSocket on shutdown", () => {
  test("SIGTERM closes with 1012", { timeout: TEST_TIMEOUT }, async () => {
    const h = await startHerald([]);
    let c;
    try {
      c = await wsConnect(h.url);
      await wsSubscribe(c, "stream:ws-shutdown");
      const stopped = h.stop();
      const { code } = await c.closed;
      assert.equal(code, 1012);
      await stopped;
    } finally {
      await c?.close();
      await h.stop();
    }
  });
});
