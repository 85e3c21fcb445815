// Rolling restart under steady publishing (README "Operations"): a real
// redis-server, three herald instances; on each instance an SSE client
// (Last-Event-ID cursor) and a WebSocket client (`since` recovery) watch
// three channels. A publisher makes ~20 publications per second on the live
// instances throughout. The instances are restarted one after another
// (SIGTERM, exit code 0, start again on a new port). Every client that is
// closed (WS 1012 "service restart", SSE retry hint + herald.shutdown)
// reconnects to a live instance with its cursor. Afterwards every client
// has every publication of its channels exactly once, in order, without
// a gap notice.

import assert from "node:assert/strict";
import { once } from "node:events";
import http from "node:http";
import { after, before, describe, test } from "node:test";

import { SseParser, cursorPosition } from "../lib/herald.mjs";
import { wsConnect } from "../lib/ws.mjs";
import { sleep, startClusterHerald, startRedis, waitReady, waitUntil } from "./lib.mjs";

const RUN = `${process.pid}-${Date.now() % 100000}`;
const CHANNELS = [`stream:rr-a-${RUN}`, `stream:rr-b-${RUN}`, `stream:rr-c-${RUN}`];
const HERALD_ARGS = ["--shutdown-timeout=5", "--shutdown-retry-ms=200", "--history-size=2000"];

const live = []; // instances accepting clients and publishes
const pick = (i) => live[Math.abs(i) % live.length];

/**
 * An SSE subscriber that reconnects (after the server's retry hint) to a
 * live instance with its last event id, like EventSource would to a
 * load-balanced URL.
 */
function sseClient(name, startIndex) {
  const c = { name, kind: "sse", got: {}, gaps: [], lastId: undefined, retryMs: 200, reconnects: 0, stopped: false, shutdownEvents: 0 };
  for (const ch of CHANNELS) c.got[ch] = [];
  let n = startIndex;
  const connect = () => {
    if (c.stopped) return;
    const h = pick(n++);
    const qs = CHANNELS.map((ch) => `channel=${encodeURIComponent(ch)}`).join("&");
    const headers = c.lastId ? { "Last-Event-ID": c.lastId } : {};
    const parser = new SseParser({
      onRetry: (ms) => (c.retryMs = ms),
      onEvent: (e) => {
        if (e.event === "herald.shutdown") c.shutdownEvents++;
        if (e.event === "herald.gap") c.gaps.push(e.data);
        // Like EventSource: every id is the cursor to resume from, the first
        // one (herald.cursor) included; it also says the stream is subscribed.
        if (e.id) {
          c.lastId = e.id;
          c.positioned = true;
        }
        if (e.event !== "rr") return;
        const d = JSON.parse(e.data);
        c.got[d.ch].push(cursorPosition(e.id, d.ch).offset);
      },
    });
    const again = () => {
      if (c.stopped || c.req !== req) return;
      c.reconnects++;
      setTimeout(connect, c.retryMs);
    };
    const req = http.get(`${h.url}/v1/sse?${qs}`, { agent: false, headers }, (res) => {
      c.connected = res.statusCode === 200;
      res.setEncoding("utf8");
      res.on("data", (t) => parser.feed(t));
      res.on("close", again);
    });
    req.on("error", again);
    c.req = req;
  };
  connect();
  c.close = () => {
    c.stopped = true;
    c.req?.destroy();
  };
  return c;
}

/**
 * A WebSocket subscriber that, when closed, reconnects to a live instance
 * and resubscribes each channel with `since` = its last position.
 */
function wsClient(name, startIndex) {
  const c = { name, kind: "ws", got: {}, gaps: [], pos: {}, reconnects: 0, stopped: false, closeCodes: [] };
  for (const ch of CHANNELS) c.got[ch] = [];
  let n = startIndex;
  const connect = async () => {
    while (!c.stopped) {
      const h = pick(n++);
      try {
        const client = await wsConnect(h.url);
        c.client = client;
        client.ws.on("message", (raw) => {
          const m = JSON.parse(raw.toString("utf8"));
          if (m.op === "publication" && m.event === "rr") {
            c.got[m.channel].push(m.offset);
            c.pos[m.channel].offset = m.offset;
          } else if (m.op === "gap") c.gaps.push(m);
          else if (m.op === "subscribed") c.pos[m.channel] = { epoch: m.epoch, offset: c.pos[m.channel]?.offset ?? m.offset };
        });
        for (const ch of CHANNELS) {
          const msg = { op: "subscribe", channel: ch };
          if (c.pos[ch]) msg.since = { epoch: c.pos[ch].epoch, offset: c.pos[ch].offset };
          const r = await client.request(msg);
          if (r.op !== "subscribed") throw new Error(`subscribe ${ch}: ${JSON.stringify(r)}`);
          if (msg.since && r.recovered !== true) c.gaps.push(r);
        }
        const closed = await client.closed;
        c.closeCodes.push(closed.code);
        if (c.stopped) return;
        c.reconnects++;
      } catch {
        // the instance went away between pick and subscribe: try another
      }
      await sleep(100);
    }
  };
  c.done = connect();
  c.close = async () => {
    c.stopped = true;
    await c.client?.close();
  };
  return c;
}

describe("rolling restart of three instances under steady publishing", { timeout: 90_000 }, () => {
  let redis;
  const all = [];
  const clients = [];

  before(async () => {
    redis = await startRedis();
    for (let i = 0; i < 3; i++) {
      const h = await startClusterHerald(redis.url, { via: "flag", args: HERALD_ARGS });
      all.push(h);
      live.push(h);
    }
    for (const h of live) await waitReady(h.url);
  }, { timeout: 30_000 });

  after(async () => {
    for (const c of clients) await c.close();
    await Promise.all(all.map((h) => h.stop()));
    await redis?.kill("SIGKILL");
  }, { timeout: 20_000 });

  test("every client receives every publication once, in order", async () => {
    for (let i = 0; i < 3; i++) {
      clients.push(sseClient(`sse${i}`, i));
      clients.push(wsClient(`ws${i}`, i));
    }
    // Subscribed everywhere before the first publication: every client must
    // then see offsets 1..N of every channel.
    // A WebSocket client is subscribed once each `subscribed` reply came, an
    // SSE one once its first event (herald.cursor) carried a cursor.
    await waitUntil(() => clients.every((c) => (c.kind === "ws" ? Object.keys(c.pos).length === 3 : c.positioned)), {
      timeoutMs: 10_000,
      what: "clients subscribed",
    });

    // Steady publishing, round robin over channels and live instances; a
    // publish refused by a stopping instance (503) or a refused connection
    // is retried on another instance (nothing was stored).
    const acked = Object.fromEntries(CHANNELS.map((ch) => [ch, []]));
    let publishing = true;
    let seq = 0;
    let retries = 0;
    const publishOne = async (n) => {
      const ch = CHANNELS[n % CHANNELS.length];
      const body = JSON.stringify({ channel: ch, event: "rr", data: { ch, seq: n } });
      for (let attempt = 0; ; attempt++) {
        const h = pick(n + attempt);
        try {
          const res = await fetch(`${h.url}/v1/publish`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body,
            signal: AbortSignal.timeout(3000),
          });
          const text = await res.text();
          if (res.status === 200) {
            acked[ch].push(JSON.parse(text).offsets[ch]);
            return;
          }
        } catch {
          // connection refused or reset: try the next instance
        }
        retries++;
        await sleep(20);
      }
    };
    // One publication every 50 ms (20 per second), not waiting for replies.
    const inflight = new Set();
    const publisher = (async () => {
      const start = Date.now();
      while (publishing) {
        const p = publishOne(seq++);
        inflight.add(p);
        p.finally(() => inflight.delete(p));
        const next = start + seq * 50;
        await sleep(Math.max(0, next - Date.now()));
      }
      await Promise.all([...inflight]);
    })();

    await waitUntil(() => CHANNELS.every((ch) => acked[ch].length >= 5), { timeoutMs: 10_000, what: "publishing under way on every channel" });
    const restarts = [];
    for (let i = 0; i < 3; i++) {
      const old = live.shift(); // oldest first; no new work goes to it
      const t0 = Date.now();
      old.process.kill("SIGTERM");
      const [code] = old.process.exitCode !== null ? [old.process.exitCode] : await once(old.process, "exit");
      assert.equal(code, 0, `instance exit code\n${old.log().slice(-2000)}`);
      const stopMs = Date.now() - t0;
      const fresh = await startClusterHerald(redis.url, { via: "flag", args: HERALD_ARGS });
      all.push(fresh);
      await waitReady(fresh.url);
      live.push(fresh);
      restarts.push({ stopMs, startedMs: Date.now() - t0 });
      await sleep(1500);
    }
    await sleep(1000);
    publishing = false;
    await publisher;

    // Every acknowledged publication, per channel: offsets 1..N.
    for (const ch of CHANNELS) {
      acked[ch].sort((a, b) => a - b); // replies may arrive out of order
      const n = acked[ch].length;
      assert.ok(n >= 20, `${ch}: ${n} publications`);
      assert.deepEqual(acked[ch], Array.from({ length: n }, (_, k) => k + 1), `${ch}: acknowledged offsets`);
    }
    await waitUntil(
      () => clients.every((c) => CHANNELS.every((ch) => c.got[ch].length >= acked[ch].length)),
      { timeoutMs: 15_000, what: "every client caught up" },
    ).catch(() => {});
    for (const c of clients) {
      assert.deepEqual(c.gaps, [], `${c.name}: no gap`);
      for (const ch of CHANNELS)
        assert.deepEqual(c.got[ch], acked[ch], `${c.name} ${ch}: every publication once, in order`);
      assert.ok(c.reconnects >= 1, `${c.name} reconnected`);
    }
    // Each client was on a restarted instance at least once: the close it
    // got was the graceful one.
    for (const c of clients.filter((c) => c.kind === "ws")) assert.ok(c.closeCodes.every((code) => code === 1012), `${c.name}: ${c.closeCodes}`);
    for (const c of clients.filter((c) => c.kind === "sse")) assert.ok(c.shutdownEvents >= 1, `${c.name}: herald.shutdown seen`);
    console.log(
      `rolling restart: ${seq} publications, ${retries} publish retries, restarts ${JSON.stringify(restarts)}, ` +
        `reconnects ${clients.map((c) => `${c.name}=${c.reconnects}`).join(" ")}`,
    );
  });
});
