// Cluster mode against a real redis-server whose data goes backwards or
// refuses writes (docs/cluster.md "History that went backwards",
// "Idempotent publishing", "Readiness"):
//
// - the same publish with the same idempotency key sent to two instances at
//   once: one publication, the same offsets in every reply;
// - Redis turned into a read-only replica (REPLICAOF) and back: /readyz 503
//   with Redis's READONLY reason and herald_redis_writable 0, then 200 again
//   without any publish (the write probe);
// - Redis restored from an older snapshot (SAVE, more publications, SIGKILL,
//   restart from the dump): a live subscriber gets an explicit
//   `epoch_changed` gap and then the new publications, never silence; a
//   cursor past the restored head is answered `offset_in_future` (or
//   `epoch_changed`) with recovered false, over SSE and WebSocket;
// - a snapshot that brings back an epoch the channel already left (Redis
//   lost the channel, a new epoch began, then the old dump was restored):
//   the old epoch is retired, its publications neither replayed nor its
//   offsets issued again.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { cursorPosition, publish, publishOk, sseCurl } from "../lib/herald.mjs";
import { cleanupStack } from "../lib/processes.mjs";
import { wsConnect, wsSubscribe } from "../lib/ws.mjs";
import {
  channelHash,
  readyz,
  redisCli,
  sseItems,
  sseSubscribe,
  startClusterHerald,
  startRedis,
  startRedisAndHerald,
  tempDir,
  waitReady,
  waitUntil,
} from "./lib.mjs";

const started = cleanupStack(); // herald, redis-server, subscribers: stopped after the file

describe("history that went backwards", () => {
  test("Redis restored from an older snapshot: a gap and a new epoch, never reused offsets", { timeout: 60_000 }, async () => {
    const dir = tempDir("herald-rollback-");
    let { redis, h } = await startRedisAndHerald(started, { rdbDir: dir });
    const LIVE = "stream:rb-live";
    const LEFT = "stream:rb-left";
    const sub = await sseSubscribe(h.url, [LIVE]);
    for (let i = 1; i <= 3; i++) await publishOk(h.url, { channels: [LIVE, LEFT], event: "before", data: { i } });
    assert.deepEqual(await redisCli(redis.port, "SAVE"), ["OK"]);
    let last;
    for (let i = 4; i <= 6; i++) last = await publishOk(h.url, { channels: [LIVE, LEFT], event: "lost", data: { i } });
    assert.equal(last[LIVE], 6);
    await sub.events.until((items) => sseItems(items, LIVE, sub.channels).filter((x) => x.kind === "pub").length >= 6, { what: "6 publications" });
    const cursor = sub.events.items.at(-1).id;
    const old = cursorPosition(cursor, LIVE);
    assert.equal(old.offset, 6);
    const leftCursor = `${channelHash(LEFT)}-${old.epoch}-6`;

    // Redis dies and comes back from the snapshot: head 3 in the same epoch.
    const port = redis.port;
    await redis.kill("SIGKILL");
    redis = await startRedis({ port, rdbDir: dir });
    started.push(redis);
    assert.deepEqual(await redisCli(port, "HGET", `herald:{${LEFT}}:meta`, "offset"), ["3"]);
    await waitReady(h.url, 10_000);

    // A cursor past the restored head (nobody here delivered LEFT's 4..6 to
    // a subscriber that is still connected): an explicit gap, never "recovered".
    const ws = await wsConnect(h.url);
    const r = await wsSubscribe(ws, LEFT, { since: { epoch: old.epoch, offset: 6 } });
    assert.equal(r.op, "subscribed");
    assert.equal(r.recovered, false, JSON.stringify(r));
    assert.ok(["offset_in_future", "epoch_changed"].includes(r.reason), JSON.stringify(r));
    await ws.close();
    const sse = sseCurl(`${h.url}/v1/sse?channel=${encodeURIComponent(LEFT)}`, { "Last-Event-ID": leftCursor });
    started.push({ stop: () => sse.close() });
    const [gap] = await sse.events.until((items) => items.filter((e) => e.event === "herald.gap").length >= 1 && items.filter((e) => e.event === "herald.gap"), { what: "the gap" });
    assert.ok(["offset_in_future", "epoch_changed"].includes(JSON.parse(gap.data).reason), gap.data);

    // The live subscriber was delivered 4..6 of the old epoch: the channel
    // moves to a new epoch instead of issuing 4..6 again.
    await waitUntil(async () => (await redisCli(port, "HGET", `herald:{${LIVE}}:meta`, "epoch"))[0] !== old.epoch, {
      timeoutMs: 10_000,
      what: "a new epoch for the live channel",
    });
    const next = await publishOk(h.url, { channel: LIVE, event: "after", data: { i: 7 } });
    assert.equal(next[LIVE], 1, "offsets count anew in the new epoch");
    const items = await sub.events.until(
      (all) => {
        const x = sseItems(all, LIVE, sub.channels);
        return x.some((y) => y.kind === "pub" && y.event === "after") && x;
      },
      { timeoutMs: 10_000, what: "the publication after the restore" },
    );
    const tail = items.slice(items.findIndex((x) => x.kind === "pub" && x.data.i === 6) + 1);
    assert.deepEqual(tail.map((x) => [x.kind, x.reason ?? x.event]), [["gap", "epoch_changed"], ["pub", "after"]]);
    assert.notEqual(tail[1].epoch, old.epoch);
    await sub.close();
  });

  test("an older snapshot that brings back an epoch the channel already left: retired, never replayed or reissued", { timeout: 60_000 }, async () => {
    const dir = tempDir("herald-stale-epoch-");
    let { redis, h } = await startRedisAndHerald(started, { rdbDir: dir });
    const LIVE = "stream:rb-stale";
    const meta = `herald:{${LIVE}}:meta`;
    const sub = await sseSubscribe(h.url, [LIVE]);
    const pubs = () => sseItems(sub.events.items, LIVE, sub.channels).filter((x) => x.kind === "pub");
    for (let i = 1; i <= 3; i++) await publishOk(h.url, { channel: LIVE, event: "e1", data: { i } });
    assert.deepEqual(await redisCli(redis.port, "SAVE"), ["OK"]);
    for (let i = 4; i <= 5; i++) await publishOk(h.url, { channel: LIVE, event: "e1", data: { i } });
    const [e1] = await redisCli(redis.port, "HGET", meta, "epoch");
    // Redis loses the channel (as after --history-ttl): the next publication
    // starts epoch 2, which the live subscriber follows.
    await redisCli(redis.port, "DEL", meta, `herald:{${LIVE}}:history`);
    await publishOk(h.url, { channel: LIVE, event: "e2", data: { i: 6 } });
    const [e2] = await redisCli(redis.port, "HGET", meta, "epoch");
    assert.notEqual(e2, e1);
    await sub.events.until(() => pubs().some((x) => x.event === "e2"), { what: "epoch 2's first" });

    // Redis comes back from the snapshot: epoch 1 at head 3, which this
    // instance left after delivering 5 in it.
    const port = redis.port;
    await redis.kill("SIGKILL");
    redis = await startRedis({ port, rdbDir: dir });
    started.push(redis);
    // Herald may retire it before we look (it reconnects within moments).
    const [restored, head] = await redisCli(port, "HMGET", meta, "epoch", "offset");
    assert.ok((restored === e1 && head === "3") || ![e1, e2].includes(restored), `${restored} ${head}`);
    await waitReady(h.url, 10_000);
    await waitUntil(async () => ![e1, e2].includes((await redisCli(port, "HGET", meta, "epoch"))[0]), {
      timeoutMs: 10_000,
      what: "epoch 1 retired: a third epoch",
    });
    const next = await publishOk(h.url, { channel: LIVE, event: "e3", data: { i: 7 } });
    assert.equal(next[LIVE], 1);
    await sub.events.until(() => pubs().some((x) => x.event === "e3"), { timeoutMs: 10_000, what: "epoch 3's first" });
    const items = sseItems(sub.events.items, LIVE, sub.channels);
    const tail = items.slice(items.findIndex((x) => x.kind === "pub" && x.event === "e2") + 1);
    // Only the gap and the new epoch: epoch 1's 1..3 are not replayed, and no
    // offset of epoch 1 is issued again.
    assert.deepEqual(tail.map((x) => [x.kind, x.reason ?? x.event]), [["gap", "epoch_changed"], ["pub", "e3"]]);
    assert.ok(![e1, e2].includes(tail[1].epoch));
    await sub.close();
  });
});

describe("idempotent publishing in cluster mode", () => {
  test("the same retry to two instances at once: one publication, the same offsets from both", { timeout: 60_000 }, async () => {
    const redis = await startRedis();
    started.push(redis);
    const a = await startClusterHerald(redis.url, { args: ["--idempotency-window=30"] });
    started.push(a);
    const b = await startClusterHerald(redis.url, { args: ["--idempotency-window=30"] });
    started.push(b);
    await waitReady(a.url);
    await waitReady(b.url);
    const channels = ["stream:idem-c1", "stream:idem-c2"];
    const sub = await sseSubscribe(a.url, channels);
    const body = { channels, event: "paid", data: { n: 1 } };
    const headers = { "Idempotency-Key": "retry-42" };
    const replies = await Promise.all([a, b, a, b].map((h) => publish(h.url, body, { headers })));
    for (const r of replies) assert.equal(r.status, 200, r.text);
    for (const r of replies) assert.deepEqual(r.json, replies[0].json, "every instance answers the first offsets");
    const ttl = Number((await redisCli(redis.port, "TTL", `herald:{${channels[0]}}:idem:retry-42`))[0]);
    assert.ok(ttl > 0 && ttl <= 30, `the key expires with the window (ttl ${ttl})`);
    const next = await publishOk(b.url, { ...body, data: { n: 2 }, idempotency_key: "retry-43" });
    for (const c of channels) assert.equal(next[c], replies[0].json.offsets[c] + 1);
    await sub.events.until((items) => items.filter((e) => e.event === "paid").length >= 4, { what: "4 events" });
    await new Promise((res) => setTimeout(res, 300));
    const paid = sub.events.items.filter((e) => e.event === "paid").map((e) => JSON.parse(e.data).n);
    assert.deepEqual(paid.sort(), [1, 1, 2, 2], "each publication once per channel");
    await sub.close();
  });
});

describe("readiness that tells the truth", () => {
  test("Redis turned into a read-only replica: /readyz 503 with the reason, a metric, ready again after REPLICAOF NO ONE", { timeout: 60_000 }, async () => {
    const primary = await startRedis();
    started.push(primary);
    const { redis, h } = await startRedisAndHerald(started);
    await publishOk(h.url, { channel: "stream:ready-1", event: "e", data: 1 });
    assert.equal(metric(await scrapeText(h.url), "herald_redis_writable"), 1);

    assert.deepEqual(await redisCli(redis.port, "REPLICAOF", "127.0.0.1", String(primary.port)), ["OK"]);
    const refused = await publish(h.url, { channel: "stream:ready-1", event: "e", data: 2 });
    assert.equal(refused.status, 503, refused.text);
    assert.equal(refused.json.error.code, "unavailable");
    await waitUntil(async () => (await readyz(h.url)).status === 503, { timeoutMs: 3000, what: "/readyz 503" });
    const r = await readyz(h.url);
    assert.equal(r.json.error.code, "unavailable");
    assert.match(r.json.error.message, /READONLY/, r.text);
    // Two updates (writable 0, then the episode counted): wait for both, then
    // the count is exactly one episode (docs/cluster.md).
    const text = await waitUntil(async () => {
      const t = await scrapeText(h.url);
      return metric(t, "herald_redis_writable") === 0 && metric(t, "herald_redis_write_failures_total") >= 1 && t;
    }, { timeoutMs: 3000, what: "herald_redis_writable 0 and herald_redis_write_failures_total counted" });
    assert.equal(metric(text, "herald_redis_write_failures_total"), 1);
    // Still not ready a while later: no write succeeded (the probe keeps failing).
    await new Promise((res) => setTimeout(res, 1500));
    assert.equal((await readyz(h.url)).status, 503);

    assert.deepEqual(await redisCli(redis.port, "REPLICAOF", "NO", "ONE"), ["OK"]);
    const t0 = Date.now();
    await waitReady(h.url, 5000); // the write probe succeeds: no publish needed
    const took = Date.now() - t0;
    assert.ok(took < 3000, `ready again after ${took} ms`);
    // /readyz and the gauge are two updates: wait for the gauge too.
    await waitUntil(async () => metric(await scrapeText(h.url), "herald_redis_writable") === 1, { timeoutMs: 3000, what: "herald_redis_writable 1" });
    await publishOk(h.url, { channel: "stream:ready-1", event: "e", data: 3 });
  });
});

async function scrapeText(url) {
  const res = await fetch(`${url}/metrics`);
  return res.text();
}

function metric(text, name) {
  const m = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
  return m ? Number(m[1]) : undefined;
}
