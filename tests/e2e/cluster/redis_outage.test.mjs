// Cluster mode through a Redis outage: three herald instances, one SSE (curl)
// and one WebSocket subscriber to `stream:out` on each, a publisher sending
// every 20 ms round robin to all instances. Redis is SIGKILLed after ~1 s and
// restarted on the same port 2 s later; publishing goes on ~2 s after every
// instance is ready again.
//
// - /readyz: 503 with a JSON error body on every instance within 3 s of the
//   kill, processes alive, 200 again within 5 s of the restart.
// - publishers get 200 (with offsets) or 503 `unavailable`, nothing else.
// - Redis without persistence (the restart loses the channel's history):
//   every live subscriber receives every acknowledged publication exactly
//   once, in offset order per epoch, and exactly one explicit gap notice
//   (`epoch_changed`) at the epoch change: never a silent gap.
// - Redis with an fsync-always AOF (data survives): no gap at all, offsets
//   contiguous, every acknowledged publication exactly once, in order.
// See docs/cluster.md ("Redis outages") and docs/protocol.md.

import assert from "node:assert/strict";
import { before, describe, test } from "node:test";

import { Centrifuge } from "centrifuge";
import WebSocket from "ws";

import { publish, publishOk, sseCurl } from "../lib/herald.mjs";
import { wsConnect } from "../lib/ws.mjs";
import {
  readyz,
  sleep,
  sseItems,
  sseSubscribe,
  startCluster,
  startRedis,
  tempDir,
  waitUntil,
  wsItems,
  wsSubscribeAll,
} from "./lib.mjs";

const OUT = "stream:out";

/** Polls every instance's /readyz until each has answered `status`; returns ms per instance. */
async function waitAllReadyz(hs, status, timeoutMs) {
  const t0 = Date.now();
  const took = await Promise.all(
    hs.map(async (h, i) => {
      let last;
      await waitUntil(
        async () => {
          last = await readyz(h.url);
          return last.status === status;
        },
        { timeoutMs, intervalMs: 50, what: `instance ${i} /readyz ${status}` },
      ).catch((err) => {
        throw new Error(`${err.message}; last answer ${last?.status} ${last?.text}`);
      });
      return { ms: Date.now() - t0, reply: last };
    }),
  );
  return took;
}

/**
 * Checks what one subscriber received against the acknowledged publications.
 * @returns {string[]} problems (empty when all is well)
 */
function check(name, items, records, { persistent, killAt, restartAt, isSse }) {
  const problems = [];
  const acked = records.filter((r) => r.status === 200);
  const bySeq = new Map(records.map((r) => [r.seq, r]));
  const gaps = items.filter((x) => x.kind === "gap");
  const pubs = items.filter((x) => x.kind === "pub");
  const seen = new Map();
  for (const p of pubs) {
    const seq = p.data?.seq;
    if (seen.has(seq)) problems.push(`${name}: seq ${seq} received twice (offsets ${seen.get(seq).offset}, ${p.offset})`);
    seen.set(seq, p);
    const rec = bySeq.get(seq);
    if (!rec) problems.push(`${name}: received unknown seq ${seq}`);
    else if (rec.status !== 200 && rec.status !== 503) problems.push(`${name}: received seq ${seq} whose publish got ${rec.status}`);
  }
  // Segments between gap notices.
  const segments = [[]];
  for (const x of items) {
    if (x.kind === "gap") segments.push([]);
    else segments.at(-1).push(x);
  }
  if (persistent) {
    if (gaps.length) problems.push(`${name}: ${gaps.length} gap notice(s) although Redis kept the data: ${JSON.stringify(gaps.map((g) => g.data))}`);
  } else {
    if (gaps.length !== 1)
      problems.push(`${name}: expected exactly one gap notice at the epoch change, got ${gaps.length}: ${JSON.stringify(gaps.map((g) => g.data))}`);
    for (const g of gaps) {
      if (g.reason !== "epoch_changed") problems.push(`${name}: gap reason ${g.reason}, want epoch_changed`);
      if (g.data.channel !== OUT) problems.push(`${name}: gap notice channel ${g.data.channel}`);
    }
  }
  // Within a segment (one epoch), offsets are contiguous from 1: these
  // subscribers were there before the channel's first publication of it.
  for (const [k, seg] of segments.entries()) {
    const offs = seg.map((p) => p.offset);
    const want = offs.map((_, i) => i + 1);
    if (JSON.stringify(offs) !== JSON.stringify(want)) {
      const firstBad = offs.findIndex((o, i) => o !== i + 1);
      problems.push(
        `${name}: segment ${k} offsets not contiguous from 1 at index ${firstBad}: ...${JSON.stringify(offs.slice(Math.max(0, firstBad - 3), firstBad + 4))} (segment length ${offs.length})`,
      );
    }
    if (isSse) {
      const epochs = new Set(seg.map((p) => p.epoch));
      if (epochs.size > 1) problems.push(`${name}: segment ${k} spans epochs ${[...epochs]} without a gap notice`);
    }
  }
  if (isSse && segments.length === 2 && segments[0].length && segments[1].length && segments[0][0].epoch === segments[1][0].epoch)
    problems.push(`${name}: gap notice but the epoch did not change`);
  // Every acknowledged publication, once, with its acknowledged offset, in
  // the right epoch.
  const missing = [];
  for (const r of acked) {
    const p = seen.get(r.seq);
    if (!p) {
      missing.push(r.seq);
      continue;
    }
    if (p.offset !== r.offset) problems.push(`${name}: seq ${r.seq} acknowledged with offset ${r.offset}, received with ${p.offset}`);
    if (!persistent) {
      const seg = segments.findIndex((s) => s.includes(p));
      const want = r.sentAt < killAt ? 0 : r.sentAt >= restartAt ? segments.length - 1 : -1;
      if (want >= 0 && seg !== want) problems.push(`${name}: seq ${r.seq} (sent ${r.sentAt < killAt ? "before the kill" : "after the restart"}) in segment ${seg}`);
    }
  }
  // Without persistence, Redis can acknowledge a publication and die before
  // its pub/sub message left; the restart then loses it with the rest of the
  // history. That is the one loss allowed, and only as the tail of the old
  // epoch, told to the subscriber by the epoch_changed gap notice.
  const oldEpochMax = Math.max(0, ...segments[0].map((p) => p.offset));
  const lost = persistent
    ? []
    : missing.filter((seq) => {
        const r = bySeq.get(seq);
        return r.sentAt < restartAt && r.offset > oldEpochMax && gaps.length === 1;
      });
  const unexplained = missing.filter((seq) => !lost.includes(seq));
  if (unexplained.length)
    problems.push(`${name}: ${unexplained.length} acknowledged publication(s) never received: seqs ${unexplained.slice(0, 20).join(",")}${unexplained.length > 20 ? ",..." : ""}`);
  return problems;
}

/**
 * Runs the whole scenario and returns what was observed; assertions about
 * the observations are the tests below. Every process is stopped on return.
 */
async function runOutage({ persistent }) {
  const dir = persistent ? tempDir("herald-redis-aof-") : null;
  let redis = await startRedis({ persist: dir });
  const port = redis.port;
  let hs = [];
  const clients = [];
  let stop = true;
  const inflight = new Set();
  const obs = { persistent, records: [], clients };
  try {
    hs = await startCluster(redis.url, 3, { via: "flag", args: ["--log-level=debug"] });
    obs.hs = hs;
    for (const [i, h] of hs.entries()) {
      clients.push({ name: `sse@${i}`, kind: "sse", instance: i, client: await sseSubscribe(h.url, [OUT]) });
      clients.push({ name: `ws@${i}`, kind: "ws", instance: i, client: await wsSubscribeAll(h.url, [OUT]) });
    }
    obs.wsStartOffsets = clients.filter((c) => c.kind === "ws").map((c) => c.client.subscribed[OUT].offset);
    obs.epoch = clients.find((c) => c.kind === "ws").client.subscribed[OUT].epoch;

    // Publisher: every 20 ms, round robin, never waiting for a reply.
    const records = obs.records;
    stop = false;
    const loop = (async () => {
      for (let seq = 1; !stop; seq++) {
        const inst = (seq - 1) % 3;
        const rec = { seq, inst, sentAt: Date.now() };
        records.push(rec);
        const p = publish(hs[inst].url, { channel: OUT, event: "tick", data: { seq } }).then(
          (r) => {
            rec.status = r.status;
            rec.json = r.json;
            rec.offset = r.json?.offsets?.[OUT];
            rec.ackAt = Date.now();
          },
          (err) => {
            rec.status = 0;
            rec.error = String(err);
          },
        );
        inflight.add(p);
        p.finally(() => inflight.delete(p));
        await sleep(20);
      }
    })();

    const acked = (since = 0) => records.filter((r) => r.status === 200 && r.ackAt > since).length;
    await waitUntil(() => acked() >= 10, { timeoutMs: 10_000, what: "10 publications acknowledged before the outage" });
    obs.killAt = Date.now();
    await redis.kill("SIGKILL");
    obs.down = await waitAllReadyz(hs, 503, 3000).catch((err) => ({ error: err }));
    obs.aliveAfterKill = hs.map((h) => h.alive());

    await sleep(Math.max(0, obs.killAt + 2000 - Date.now()));
    obs.restartAt = Date.now();
    redis = await startRedis({ port, persist: dir });
    obs.up = await waitAllReadyz(hs, 200, 5000).catch((err) => ({ error: err }));
    if (!obs.up.error) await waitUntil(() => acked(obs.restartAt) >= 10, { timeoutMs: 10_000, what: "10 publications acknowledged after the restart" });
    stop = true;
    await loop;
    await Promise.all([...inflight]);
    obs.aliveAtEnd = hs.map((h) => h.alive());

    // Let every client catch up with every acknowledged publication (or time out).
    const ackedSeqs = new Set(records.filter((r) => r.status === 200).map((r) => r.seq));
    obs.waits = await Promise.allSettled(
      clients.map((c) => {
        const src = c.kind === "sse" ? c.client.events : c.client.inbox;
        return src.until(
          () => {
            const got = new Set(itemsOf(c).filter((x) => x.kind === "pub").map((x) => x.data?.seq));
            for (const s of ackedSeqs) if (!got.has(s)) return false;
            return true;
          },
          { timeoutMs: 5000, what: `${c.name}: all ${ackedSeqs.size} acknowledged publications` },
        );
      }),
    );
    await sleep(300); // late duplicates would show now
    obs.items = clients.map(itemsOf);
    // A new subscriber on every instance, after the outage.
    obs.late = await Promise.all(
      hs.map(async (h) => {
        const c = await wsConnect(h.url);
        try {
          return await c.request({ op: "subscribe", channel: OUT }, { timeoutMs: 3000 });
        } catch (err) {
          return { error: err.message.slice(0, 200) };
        } finally {
          await c.close();
        }
      }),
    );
    obs.logs = hs.map((h) => h.log());
    return obs;
  } finally {
    stop = true;
    await Promise.all([...inflight]).catch(() => {});
    await Promise.all(clients.map(({ client }) => client.close().catch(() => {})));
    await Promise.all(hs.map((h) => h.stop()));
    await redis.kill("SIGKILL");
  }
}

function itemsOf(c) {
  return c.kind === "sse" ? sseItems(c.client.events.items, OUT, c.client.channels) : wsItems(c.client.inbox.items, OUT);
}

function describeOutage(title, { persistent }) {
  describe(title, { timeout: 40_000 }, () => {
    let obs;
    before(async () => {
      obs = await runOutage({ persistent });
    }, { timeout: 45_000 });

    test("/readyz: 503 with a JSON error within 3 s of the kill, 200 within 5 s of the restart; processes alive", (t) => {
      assert.ok(!obs.down.error, obs.down.error?.message);
      for (const [i, d] of obs.down.entries()) {
        assert.equal(d.reply.headers.get("content-type"), "application/json", `instance ${i}`);
        assert.equal(d.reply.json?.error?.code, "unavailable", `instance ${i} /readyz body ${d.reply.text}`);
        assert.equal(typeof d.reply.json.error.message, "string");
      }
      assert.deepEqual(obs.aliveAfterKill, [true, true, true], "an instance died when Redis went away");
      assert.ok(!obs.up.error, obs.up.error?.message);
      assert.deepEqual(obs.aliveAtEnd, [true, true, true]);
      t.diagnostic(
        `readyz 503 after ${obs.down.map((d) => d.ms).join("/")} ms; 200 after ${obs.up.map((d) => d.ms).join("/")} ms from the restart`,
      );
    });

    test("publishers get 200 with an offset, or 503 unavailable", (t) => {
      const { records, killAt, restartAt } = obs;
      const statuses = {};
      for (const r of records) statuses[r.status] = (statuses[r.status] || 0) + 1;
      t.diagnostic(`publishes ${records.length} ${JSON.stringify(statuses)}`);
      assert.deepEqual(records.filter((r) => r.status !== 200 && r.status !== 503), [], "replies other than 200/503");
      for (const r of records.filter((x) => x.status === 503))
        assert.equal(r.json?.error?.code, "unavailable", `503 body ${JSON.stringify(r.json)}`);
      const acked = records.filter((r) => r.status === 200);
      for (const r of acked) assert.ok(Number.isInteger(r.offset) && r.offset > 0, JSON.stringify(r));
      const ackedBefore = acked.filter((r) => r.sentAt < killAt).length;
      const afterRestart = acked.filter((r) => r.sentAt >= restartAt).length;
      t.diagnostic(`acknowledged: ${ackedBefore} before the kill, ${afterRestart} after the restart`);
      assert.ok(ackedBefore >= 10, `acknowledged before the kill: ${ackedBefore}`);
      assert.ok(afterRestart >= 10, `acknowledged after the restart: ${afterRestart}`);
      assert.ok((statuses[503] || 0) > 0, "no publish failed while Redis was away");
      // An offset is acknowledged once per epoch.
      const key = (r) => `${!persistent && r.sentAt >= restartAt ? 2 : 1}:${r.offset}`;
      assert.equal(new Set(acked.map(key)).size, acked.length, "two acknowledged publications share an offset");
      if (persistent) {
        // Same epoch throughout: offsets keep counting across the outage.
        const offs = acked.map((r) => r.offset).sort((a, b) => a - b);
        assert.equal(new Set(offs).size, offs.length);
      }
    });

    test(
      persistent
        ? "every subscriber: every acknowledged publication once, in order, offsets contiguous, no gap"
        : "every subscriber: every acknowledged publication once, in order per epoch, one epoch_changed gap notice",
      {},
      (t) => {
        const problems = [];
        for (const [k, c] of obs.clients.entries()) {
          // Waiting for every acknowledged publication times out in the one
          // loss check() allows (the old epoch's tail, acknowledged by a Redis
          // that died before its pub/sub message left): check() judges.
          if (obs.waits[k].status === "rejected") t.diagnostic(`${c.name}: ${obs.waits[k].reason.message.slice(0, 160)}`);
          problems.push(
            ...check(c.name, obs.items[k], obs.records, {
              persistent,
              killAt: obs.killAt,
              restartAt: obs.restartAt,
              isSse: c.kind === "sse",
            }),
          );
        }
        const counts = obs.items.map((items) => items.filter((x) => x.kind === "pub").length);
        t.diagnostic(`publications received per client: ${counts.join(" ")}`);
        if (problems.length) {
          // Which instances are concerned, and what their logs say about syncing.
          const bad = new Set(obs.clients.filter((c) => problems.some((p) => p.startsWith(c.name + ":"))).map((c) => c.instance));
          for (const i of bad)
            t.diagnostic(
              `instance ${i} log (sync/redis lines):\n` +
                obs.logs[i]
                  .split("\n")
                  .filter((l) => /sync|redis:/.test(l))
                  .slice(-12)
                  .join("\n"),
            );
        }
        assert.deepEqual(problems, [], problems.join("\n"));
      },
    );

    test(
      "after the outage a new subscriber on every instance is answered with the channel's head",
      {},
      () => {
        const acked = obs.records.filter((r) => r.status === 200 && r.sentAt >= obs.restartAt);
        const head = Math.max(...acked.map((r) => r.offset));
        for (const [i, r] of obs.late.entries()) {
          assert.equal(r.op, "subscribed", `instance ${i}: ${JSON.stringify(r)}`);
          assert.equal(r.offset, head, `instance ${i}: ${JSON.stringify(r)}`);
          if (persistent) assert.equal(r.epoch, obs.epoch, `instance ${i}: same epoch as before the outage`);
          else assert.notEqual(r.epoch, obs.epoch, `instance ${i}: a new epoch after the history was lost`);
        }
        assert.equal(new Set(obs.late.map((r) => r.epoch)).size, 1);
      },
    );
  });
}

// A failed sync (Redis subscriber back before the command connections) is
// retried by the channel until it succeeds: this variant once stalled on it.
describeOutage("Redis outage, Redis without persistence (history lost on restart)", {
  persistent: false,
});

describeOutage("Redis outage, Redis with an fsync-always AOF (history survives)", { persistent: true });

// A subscribe needs Redis (the channel's watch and sync) unless the instance
// already mirrors the channel. While Redis is down, a WebSocket subscribe is
// answered within twice --redis-command-timeout-ms: `unavailable` (Herald's
// protocol) or error 100 with `temporary` (Centrifugo's: the SDK resubscribes
// by itself). An SSE stream stays open and starts (herald.cursor) once Redis
// is back. See docs/cluster.md ("Redis outages").
describe("subscribing while Redis is down", { timeout: 40_000 }, () => {
  test("WebSocket and Centrifugo subscribes get a retryable error in time; SSE waits, then starts", async () => {
    let redis = await startRedis();
    const port = redis.port;
    const [h] = await startCluster(redis.url, 1, { via: "flag", args: ["--redis-command-timeout-ms=500"] });
    const closers = [];
    try {
      await redis.kill("SIGKILL");
      await waitUntil(async () => (await readyz(h.url)).status === 503, { timeoutMs: 5000, what: "/readyz 503" });

      const ws = await wsConnect(h.url);
      closers.push(() => ws.close());
      const refused = await ws.request({ op: "subscribe", channel: "stream:down-ws" }, { timeoutMs: 5000 });
      assert.equal(refused.op, "error", JSON.stringify(refused));
      assert.equal(refused.code, "unavailable");
      assert.equal(refused.channel, "stream:down-ws");
      assert.match(refused.message, /did not answer within 1000 ms/);

      // The real SDK: a temporary error, then it subscribes again by itself.
      const cf = new Centrifuge(`${h.url.replace("http", "ws")}/connection/websocket`, {
        websocket: WebSocket,
        minReconnectDelay: 100,
        maxReconnectDelay: 500,
        timeout: 3000,
      });
      closers.push(() => cf.disconnect());
      const sub = cf.newSubscription("stream:down-cf", { minResubscribeDelay: 100, maxResubscribeDelay: 500 });
      const sdk = { errors: [], subscribed: [], pubs: [] };
      sub.on("error", (ctx) => sdk.errors.push(ctx.error));
      sub.on("subscribed", (ctx) => sdk.subscribed.push(ctx));
      sub.on("publication", (ctx) => sdk.pubs.push(ctx.data));
      sub.subscribe();
      cf.connect();
      await waitUntil(() => sdk.errors.length >= 1, { timeoutMs: 5000, what: "a subscribe error at the SDK" });
      assert.equal(sdk.errors[0].code, 100, JSON.stringify(sdk.errors));
      assert.equal(sdk.errors[0].temporary, true);
      assert.equal(sdk.subscribed.length, 0);
      assert.equal(sub.state, "subscribing", "the SDK keeps trying");

      const sse = sseCurl(`${h.url}/v1/sse?channel=stream:down-sse`);
      closers.push(() => sse.close());
      assert.equal(await sse.status, 200);
      await sleep(1500); // past the WebSocket timeout: the stream stays open, unanswered
      assert.deepEqual(sse.events.items.filter((e) => e.event === "herald.cursor"), []);
      assert.equal(h.alive(), true);

      redis = await startRedis({ port });
      await waitUntil(async () => (await readyz(h.url)).status === 200, { timeoutMs: 8000, what: "/readyz 200" });
      await sse.events.until((items) => items.some((e) => e.event === "herald.cursor"), { timeoutMs: 8000, what: "herald.cursor" });
      await waitUntil(() => sdk.subscribed.length === 1, { timeoutMs: 8000, what: "the SDK subscribed" });
      const again = await ws.request({ op: "subscribe", channel: "stream:down-ws" }, { timeoutMs: 5000 });
      assert.equal(again.op, "subscribed", JSON.stringify(again));

      for (const ch of ["stream:down-ws", "stream:down-cf", "stream:down-sse"]) {
        await publishOk(h.url, { channel: ch, event: "back", data: { ch } });
      }
      await ws.inbox.until((items) => items.some((m) => m.op === "publication" && m.channel === "stream:down-ws"), {
        what: "the WebSocket publication",
      });
      await waitUntil(() => sdk.pubs.length === 1, { timeoutMs: 5000, what: "the SDK publication" });
      assert.deepEqual(sdk.pubs, [{ ch: "stream:down-cf" }]);
      await sse.events.until((items) => items.some((e) => e.event === "back"), { what: "the SSE publication" });
    } finally {
      for (const close of closers) await Promise.resolve(close()).catch(() => {});
      await h.stop();
      await redis.kill("SIGKILL");
    }
  });
});
