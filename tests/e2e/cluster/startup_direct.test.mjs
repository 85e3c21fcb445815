// Cluster mode, two edges of docs/cluster.md:
// - Redis not reachable at start: the instance starts, serves /healthz,
//   reports not-ready (/readyz 503) and refuses publishes (503
//   unavailable), retries in the background, and works once Redis is up.
// - A process that is not Herald publishes straight into Redis with
//   `redis-cli --eval net/redis/publish.lua ...` (the documented call): the
//   publication reaches Herald's subscribers with the offset Redis gave it,
//   and the next Herald publish continues the same offsets. A malformed
//   envelope PUBLISHed on a Herald pub/sub channel is dropped: the instance
//   stays up and its subscribers keep receiving.

import assert from "node:assert/strict";
import path from "node:path";
import { describe, test } from "node:test";

import { getJson, publish, publishOk } from "../lib/herald.mjs";
import { cleanupStack } from "../lib/processes.mjs";
import {
  REPO,
  freePort,
  readyz,
  redisCli,
  sseItems,
  sseSubscribe,
  startClusterHerald,
  startRedis,
  startRedisAndHerald,
  waitUntil,
} from "./lib.mjs";

const stops = cleanupStack(); // run after the file, last first

describe("cluster mode edges", { timeout: 60_000 }, () => {
  test("Redis not reachable at start: healthz ok, readyz 503, publish 503, then ready", async () => {
    const port = await freePort(); // nothing listens there yet
    const h = await startClusterHerald(`redis://127.0.0.1:${port}`);
    stops.push(() => h.stop());
    const health = await getJson(h.url, "/healthz");
    assert.equal(health.status, 200);
    assert.equal(health.json.mode, "cluster");
    assert.equal(health.json.redis, "down");
    const r = await readyz(h.url);
    assert.equal(r.status, 503);
    assert.equal(r.json.error.code, "unavailable");
    const p = await publish(h.url, { channel: "stream:boot", event: "e", data: 1 });
    assert.equal(p.status, 503);
    assert.equal(p.json.error.code, "unavailable");

    const redis = await startRedis({ port });
    stops.push(() => redis.stop());
    await waitUntil(async () => (await readyz(h.url)).status === 200, {
      timeoutMs: 10_000,
      what: "/readyz 200 after Redis came up",
    });
    const sub = await sseSubscribe(h.url, ["stream:boot"]);
    stops.push(() => sub.close());
    const ok = await publishOk(h.url, { channel: "stream:boot", event: "e", data: { n: 1 } });
    assert.equal(ok["stream:boot"], 1);
    await waitUntil(() => sseItems(sub.events.items, "stream:boot", sub.channels).length === 1, {
      what: "the publication after Redis came up",
    });
  });

  test("a non-Herald publisher runs publish.lua through redis-cli; garbage envelopes are dropped", async () => {
    const { redis, h } = await startRedisAndHerald(stops);
    const ch = "stream:direct";
    const sub = await sseSubscribe(h.url, [ch]);
    stops.push(() => sub.close());

    // The documented call (docs/cluster.md): KEYS meta, history; ARGV pubsub,
    // channel, event, data, history size, ttl, epoch for a new channel.
    const script = path.join(REPO, "net", "redis", "publish.lua");
    const out = await redisCli(redis.port, "--eval", script, `herald:{${ch}}:meta`, `herald:{${ch}}:history`, ",",
      `herald:{${ch}}:pub`, ch, "withdrawn", JSON.stringify({ amount: "12.5000000", via: "redis-cli" }),
      "256", "300", "fromcli");
    // The channel already has an epoch (Herald synced it for the subscriber):
    // the script keeps it and gives offset 1.
    assert.equal(out.length, 2, out.join("|"));
    assert.equal(out[1], "1"); // redis-cli prints bare values when not on a terminal

    // Garbage on the channel's pub/sub channel: dropped, nothing delivered.
    await redisCli(redis.port, "PUBLISH", `herald:{${ch}}:pub`, "not json");
    await redisCli(redis.port, "PUBLISH", `herald:{${ch}}:pub`,
      JSON.stringify({ channel: ch, epoch: "x", offset: 0, event: "herald.gap", data: {} }));

    const next = await publishOk(h.url, { channel: ch, event: "topped_up", data: { via: "http" } });
    assert.equal(next[ch], 2);

    await waitUntil(() => sseItems(sub.events.items, ch, sub.channels).filter((x) => x.kind === "pub").length >= 2, {
      what: "both publications",
    });
    await new Promise((r) => setTimeout(r, 200));
    const got = sseItems(sub.events.items, ch, sub.channels).filter((x) => x.kind === "pub");
    assert.deepEqual(got.map((x) => [x.offset, x.event]), [[1, "withdrawn"], [2, "topped_up"]]);
    assert.deepEqual(got[0].data, { amount: "12.5000000", via: "redis-cli" });
    assert.equal((await getJson(h.url, "/healthz")).status, 200);
  });
});
