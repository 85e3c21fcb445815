// Idempotent publishing in in-process mode (docs/protocol.md "Idempotent
// publishing"): a publish that repeats an idempotency key (header or body
// field) within --idempotency-window gets the first publication's offsets
// and delivers nothing; after the window it is a new publication; bad keys
// and disagreeing keys are refused; a body with a duplicate key is refused.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { awaitBackgroundStops, channelOfEvent, publish, publishOk, sleep, sseReady, suiteHerald } from "./lib/herald.mjs";
import { wsConnect, wsSubscribe, publicationsOf } from "./lib/ws.mjs";

const TEST_TIMEOUT = 20_000;

after(() => awaitBackgroundStops());

describe("idempotent publishing (in-process)", () => {
  const h = suiteHerald(["--idempotency-window=2"]);

  test("a retry with the same Idempotency-Key: the same offsets, delivered once", { timeout: TEST_TIMEOUT }, async () => {
    const channels = ["stream:idem-1", "stream:idem-2"];
    const sse = await sseReady(h.url, channels);
    const ws = await wsConnect(h.url);
    for (const c of channels) await wsSubscribe(ws, c);
    const body = { channels, event: "withdrawn", data: { amount: "1.5" } };
    const headers = { "Idempotency-Key": "9f1c2a44-retry-1" };
    const first = await publish(h.url, body, { headers });
    assert.equal(first.status, 200, first.text);
    const again = await Promise.all([1, 2, 3].map(() => publish(h.url, body, { headers })));
    for (const r of again) assert.deepEqual(r.json, first.json, "the reply of the original");
    // A field in the body is the same key.
    const viaField = await publish(h.url, { ...body, idempotency_key: "9f1c2a44-retry-1" });
    assert.deepEqual(viaField.json, first.json);
    const other = await publishOk(h.url, { ...body, data: { amount: "2" } }, { headers: { "Idempotency-Key": "another" } });
    for (const c of channels) assert.equal(other[c], first.json.offsets[c] + 1, "a new key is a new publication");
    await ws.inbox.until(() => channels.every((c) => publicationsOf(ws, c).length >= 2), { what: "2 per channel" });
    // The SSE connection is another connection: nothing says it is as far as
    // the WebSocket one, so wait for its deliveries too.
    await sse.events.until((items) => items.slice(sse.mark).filter((e) => e.event === "withdrawn").length >= 4, {
      what: "4 SSE events (2 per channel)",
    });
    await sleep(200);
    for (const c of channels) {
      assert.deepEqual(publicationsOf(ws, c).map((p) => p.data.amount), ["1.5", "2"], `${c}: once each`);
    }
    const events = sse.events.items.slice(sse.mark).filter((e) => e.event === "withdrawn");
    assert.equal(events.length, 4, JSON.stringify(events));
    // Per channel, in offset order; between the channels in any order (docs/protocol.md).
    const perChannel = Object.fromEntries(channels.map((c) => [c, []]));
    let prevId = sse.events.items[sse.mark - 1].id;
    for (const e of sse.events.items.slice(sse.mark)) {
      const ch = channelOfEvent(prevId, e.id, channels);
      assert.ok(ch, `event id ${e.id} advances exactly one channel from ${prevId}`);
      perChannel[ch].push(JSON.parse(e.data).amount);
      prevId = e.id;
    }
    for (const c of channels) assert.deepEqual(perChannel[c], ["1.5", "2"], `SSE ${c}: once each`);
    await sse.close();
    await ws.close();
  });

  test("after the window the key is forgotten: a new publication", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:idem-window";
    const body = { channel, event: "e", data: 1, idempotency_key: "k-window" };
    const a = await publishOk(h.url, body);
    assert.deepEqual(await publishOk(h.url, body), a);
    await sleep(2300);
    const b = await publishOk(h.url, body);
    assert.equal(b[channel], a[channel] + 1);
  });

  test("bad keys are refused with 400 invalid_request", { timeout: TEST_TIMEOUT }, async () => {
    const body = { channel: "stream:idem-bad", event: "e", data: 1 };
    for (const [what, r] of [
      ["an empty field", await publish(h.url, { ...body, idempotency_key: "" })],
      ["a number", await publish(h.url, { ...body, idempotency_key: 7 })],
      ["too long", await publish(h.url, { ...body, idempotency_key: "k".repeat(129) })],
      ["a space", await publish(h.url, { ...body, idempotency_key: "a b" })],
      ["header and field differ", await publish(h.url, { ...body, idempotency_key: "a" }, { headers: { "Idempotency-Key": "b" } })],
    ]) {
      assert.equal(r.status, 400, `${what}: ${r.text}`);
      assert.equal(r.json.error.code, "invalid_request", what);
    }
    const ok = await publish(h.url, { ...body, idempotency_key: "k".repeat(128) });
    assert.equal(ok.status, 200);
  });

  test("a publish body that names a key twice is refused with 400 invalid_json", { timeout: TEST_TIMEOUT }, async () => {
    const r = await publish(h.url, '{"channel":"stream:idem-dup","channel":"stream:other","event":"e","data":1}');
    assert.equal(r.status, 400);
    assert.equal(r.json.error.code, "invalid_json");
    assert.match(r.json.error.message, /duplicate key "channel"/);
    const nested = await publish(h.url, '{"channel":"stream:idem-dup","event":"e","data":{"to":"a","to":"b"}}');
    assert.equal(nested.status, 400);
  });
});
