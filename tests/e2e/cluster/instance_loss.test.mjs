// Cluster mode, losing an instance: an SSE (curl) and a WebSocket client on
// instance A watch `stream:loss` and receive some publications; A is
// SIGKILLed; 10 publications are made on instance B while the clients are
// away; the clients reconnect to instance C with their cursor (SSE
// Last-Event-ID, WebSocket `since`) and receive exactly the 10 they missed
// (WebSocket: `recovered: true`), then live ones published on B.
// See docs/cluster.md ("How it works", "Deployment") and docs/protocol.md.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { cursorPosition, publishOk, sseCurl } from "../lib/herald.mjs";
import { wsConnect, wsSubscribe } from "../lib/ws.mjs";
import {
  killHerald,
  numsub,
  readyz,
  sleep,
  sseItems,
  sseSubscribe,
  suiteCluster,
  waitUntil,
  wsItems,
  wsSubscribeAll,
} from "./lib.mjs";

const LOSS = "stream:loss";
const pub = (h, seq) => publishOk(h.url, { channel: LOSS, event: "loss", data: { seq } });

describe("losing an instance: clients resume on another one", { timeout: 60_000 }, () => {
  const closers = [];
  const { redis, hs } = suiteCluster(3, {
    via: "env",
    beforeStop: () => Promise.all(closers.map((c) => c().catch(() => {}))),
  });

  test("SSE Last-Event-ID and WebSocket since recover exactly the missed publications on another instance", async (t) => {
    const [A, B, C] = hs;

    // Clients on A.
    const sse = await sseSubscribe(A.url, [LOSS]);
    closers.push(() => sse.close());
    const ws = await wsSubscribeAll(A.url, [LOSS]);
    closers.push(() => ws.close());
    const epoch = ws.subscribed[LOSS].epoch;
    assert.match(epoch, /^[a-z0-9]{1,32}$/);
    assert.equal(ws.subscribed[LOSS].offset, 0);

    // Some publications, made on B, reach the clients on A.
    let seq = 0;
    for (let i = 0; i < 5; i++) assert.deepEqual(await pub(B, ++seq), { [LOSS]: seq });
    const ssePubs = () => sseItems(sse.events.items, LOSS, sse.channels).filter((x) => x.kind === "pub");
    const wsPubs = () => wsItems(ws.inbox.items, LOSS).filter((x) => x.kind === "pub");
    await sse.events.until(() => ssePubs().length >= 5, { what: "5 SSE publications on A" });
    await ws.inbox.until(() => wsPubs().length >= 5, { what: "5 WS publications on A" });
    assert.deepEqual(ssePubs().map((x) => [x.offset, x.data.seq]), [[1, 1], [2, 2], [3, 3], [4, 4], [5, 5]]);
    assert.deepEqual(wsPubs().map((x) => [x.offset, x.data.seq]), [[1, 1], [2, 2], [3, 3], [4, 4], [5, 5]]);
    assert.ok(ssePubs().every((x) => x.epoch === epoch), "SSE and WS see the same epoch");
    const lastId = sse.events.items.at(-1).id;
    assert.deepEqual(cursorPosition(lastId, LOSS), { epoch, offset: 5 });
    const since = { epoch, offset: wsPubs().at(-1).offset };
    assert.equal(await numsub(redis.port, `herald:{${LOSS}}:pub`), 1, "only A watches the channel");

    // A dies; its clients are cut off.
    await killHerald(A);
    await sse.exited;
    await ws.closed;
    // Redis forgets A's subscription with its connection.
    await waitUntil(async () => (await numsub(redis.port, `herald:{${LOSS}}:pub`)) === 0, {
      timeoutMs: 2000,
      what: "A's SUBSCRIBE gone from Redis",
    });
    for (const h of [B, C]) assert.equal((await readyz(h.url)).status, 200);

    // 10 publications while the clients are away.
    for (let i = 0; i < 10; i++) assert.deepEqual(await pub(B, ++seq), { [LOSS]: seq });

    // The clients come back on C with their cursors.
    const qs = sse.channels.map((c) => `channel=${encodeURIComponent(c)}`).join("&");
    const sse2 = sseCurl(`${C.url}/v1/sse?${qs}`, { "Last-Event-ID": lastId });
    closers.push(() => sse2.close());
    assert.equal(await sse2.status, 200);
    const ws2 = await wsConnect(C.url);
    closers.push(() => ws2.close());
    const sub = await wsSubscribe(ws2, LOSS, { since, id: "resume" });
    assert.deepEqual(sub, { op: "subscribed", id: "resume", channel: LOSS, epoch, offset: 15, recovered: true });

    const sse2Items = () => sseItems(sse2.events.items, LOSS, sse.channels, { startId: lastId });
    const ws2Items = () => wsItems(ws2.inbox.items, LOSS);
    const missed = Array.from({ length: 10 }, (_, i) => ({ kind: "pub", offset: 6 + i, seq: 6 + i }));
    const shape = (items) => items.map((x) => (x.kind === "pub" ? { kind: x.kind, offset: x.offset, seq: x.data?.seq } : x));
    await sse2.events.until(() => sse2Items().length >= 10, { what: "10 recovered SSE publications" });
    await ws2.inbox.until(() => ws2Items().length >= 10, { what: "10 recovered WS publications" });
    await sleep(200); // nothing more may come
    assert.deepEqual(shape(sse2Items()), missed, "SSE on C: exactly the missed 10");
    assert.deepEqual(shape(ws2Items()), missed, "WS on C: exactly the missed 10");
    assert.equal(sse2.events.items.length, 10, `SSE on C: only the missed publications: ${JSON.stringify(sse2.events.items)}`);
    assert.ok(sse2Items().every((x) => x.epoch === epoch));
    assert.equal(await numsub(redis.port, `herald:{${LOSS}}:pub`), 1, "C watches the channel now");

    // Then live publications, again made on B.
    for (let i = 0; i < 3; i++) assert.deepEqual(await pub(B, ++seq), { [LOSS]: seq });
    const all = Array.from({ length: 13 }, (_, i) => ({ kind: "pub", offset: 6 + i, seq: 6 + i }));
    await sse2.events.until(() => sse2Items().length >= 13, { what: "3 live SSE publications" });
    await ws2.inbox.until(() => ws2Items().length >= 13, { what: "3 live WS publications" });
    await sleep(200);
    assert.deepEqual(shape(sse2Items()), all, "SSE on C: missed then live, once each");
    assert.deepEqual(shape(ws2Items()), all, "WS on C: missed then live, once each");
    assert.equal(sse2.events.items.filter((e) => e.event === "herald.gap").length, 0);
    assert.equal(ws2.inbox.items.filter((m) => m.op === "gap").length, 0);
    t.diagnostic(`SSE resumed from ${lastId}; WS since ${JSON.stringify(since)}`);
  });
});
