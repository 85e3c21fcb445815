// GET /metrics and GET /v1/status of a real herald (docs/metrics.md): the
// exposition passes `promtool check metrics`, and its figures move exactly as
// the clients of the test make them move: connections by transport,
// deliveries = publications x subscribers, bytes written = bytes the clients
// read, publish-to-write observations, disconnect reasons (client,
// protocol_error, slow_client), recoveries, HTTP errors, channels, the
// outbound buffer gauge, and the process figures; heartbeat_timeout on a
// WebSocket client that answers no ping.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { getJson, makeCursor, publish, publishOk, rawSse, suiteHerald, waitUntil, withHerald } from "./lib/herald.mjs";
import { promtoolCheck, scrape, scrapeUntil as scrapeMetricsUntil } from "./lib/metrics.mjs";
import { publicationsOf, rawWsConnect, wsConnect, wsSubscribe } from "./lib/ws.mjs";

const CHANNEL = "stream:metrics-a";
const SLOW_CHANNEL = "stream:metrics-slow";
const PUBLICATIONS = 10;

const cleanup = [];

// No SSE heartbeat during the test: every byte written is a publication.
const h = suiteHerald(["--client-max-buffer=65536", "--sse-heartbeat=600"], {
  beforeStop: async () => {
    for (const f of cleanup.reverse()) await f();
  },
  stop: "await",
});

const sse = { transport: "sse" };
const ws = { transport: "ws" };

/** Publishes probes on `channel` until every raw SSE client got one. */
async function sseClientsReady(clients, channel) {
  let n = 0;
  await waitUntil(
    async () => {
      const tag = `ready-${++n}`;
      await publishOk(h.url, { channel, event: "probe", data: { tag } });
      await waitUntil(() => clients.every((c) => c.events().some((e) => e.data.includes(tag))), {
        timeoutMs: 300,
      }).catch(() => {});
      return clients.every((c) => c.events().some((e) => e.data.includes(tag)));
    },
    { timeoutMs: 5000, intervalMs: 10, what: "every SSE client receiving" },
  );
}

/** Polls /metrics until `pred(scrape)` holds; returns that scrape. */
const scrapeUntil = (pred, what) => scrapeMetricsUntil(h.url, pred, what);

describe("GET /metrics", { timeout: 90_000 }, () => {
  test("is Prometheus text format 0.0.4 that promtool accepts, with every documented family", async () => {
    const m = await scrape(h.url);
    assert.equal(m.status, 200);
    assert.match(m.contentType, /^text\/plain; version=0\.0\.4/);
    const check = await promtoolCheck(m.text);
    assert.equal(check.code, 0, `promtool check metrics:\n${check.output}\n${m.text}`);
    for (const family of [
      "herald_build_info",
      "herald_connections",
      "herald_connects_total",
      "herald_disconnects_total",
      "herald_channels",
      "herald_publications_received_total",
      "herald_deliveries_total",
      "herald_frames_written_total",
      "herald_bytes_written_total",
      "herald_outbound_buffer_bytes",
      "herald_recoveries_total",
      "herald_publish_to_write_seconds",
      "herald_http_errors_total",
      "herald_conflated_publications_total",
      "process_cpu_seconds_total",
      "process_resident_memory_bytes",
      "process_open_fds",
      "process_max_fds",
      "process_start_time_seconds",
    ]) {
      assert.match(m.text, new RegExp(`^# TYPE ${family} `, "m"), family);
    }
    // In-process mode: no Redis figures.
    assert.doesNotMatch(m.text, /herald_redis/);
    const status = await getJson(h.url, "/v1/status");
    assert.equal(status.json.mode, "in-process");
    assert.equal(status.json.redis, null);
    assert.equal(m.get("herald_build_info", { version: status.json.version }), 1);
    // Process figures are this process's.
    const rss = m.get("process_resident_memory_bytes");
    const rssKb = h.rssKb();
    assert.ok(Math.abs(rss / 1024 - rssKb) < rssKb * 0.5, `RSS ${rss} bytes vs /proc ${rssKb} KiB`);
    assert.ok(m.get("process_open_fds") >= 4, "listener, epoll, eventfd, stdio...");
    assert.ok(m.get("process_max_fds") >= m.get("process_open_fds"));
    const start = m.get("process_start_time_seconds");
    assert.ok(Math.abs(start - Date.now() / 1000) < 120, `start time ${start}`);
  });

  test(`deliveries = publications x subscribers; bytes written = bytes read; connections by transport`, async () => {
    const sseClients = [];
    for (let i = 0; i < 3; i++) {
      const c = await rawSse(h.port, `/v1/sse?channel=${CHANNEL}`);
      cleanup.push(async () => c.destroy());
      sseClients.push(c);
    }
    await sseClientsReady(sseClients, CHANNEL);
    const wsClients = [];
    for (let i = 0; i < 2; i++) {
      const c = await wsConnect(h.url);
      cleanup.push(() => c.close());
      const reply = await wsSubscribe(c, CHANNEL);
      assert.equal(reply.op, "subscribed");
      wsClients.push(c);
    }
    // A write is counted just after the kernel took it, so a client can read
    // bytes a moment before /metrics counts them (another I/O thread may answer
    // the scrape first): the baseline is a scrape that has counted everything
    // the clients read so far (SSE: every byte, head included; WebSocket:
    // every message), or the deltas below would be off by the stragglers.
    const sum = (xs) => xs.reduce((a, b) => a + b, 0);
    const m1 = await scrapeUntil(
      (m) =>
        m.get("herald_connections", sse) === 3 &&
        m.get("herald_connections", ws) === 2 &&
        m.get("herald_bytes_written_total", sse) === sum(sseClients.map((c) => c.bytes())) &&
        m.get("herald_frames_written_total", ws) === sum(wsClients.map((c) => c.inbox.items.length)) &&
        m.get("herald_connects_total", sse) >= 3 &&
        m.get("herald_connects_total", ws) >= 2,
      "3 SSE and 2 WebSocket connections (and connects), every byte they read counted",
    );
    assert.equal(m1.get("herald_connects_total", sse), 3);
    assert.equal(m1.get("herald_connects_total", ws), 2);
    const bytesBefore = sseClients.map((c) => c.bytes());

    for (let i = 0; i < PUBLICATIONS; i++) {
      await publishOk(h.url, { channel: CHANNEL, event: "n", data: { i, pad: "p".repeat(100 * i) } });
    }
    await waitUntil(
      () =>
        sseClients.every((c) => c.events().filter((e) => e.event === "n").length === PUBLICATIONS) &&
        wsClients.every((c) => publicationsOf(c, CHANNEL).filter((p) => p.event === "n").length === PUBLICATIONS),
      { what: "every client has every publication" },
    );
    const d = (m, name, labels) => m.get(name, labels) - m1.get(name, labels);
    const subscribers = { sse: 3, ws: 2 };
    // Writes complete (and are counted) a moment after the clients read them;
    // each figure read below is its own update: wait until all have it.
    const m2 = await scrapeUntil(
      (m) =>
        d(m, "herald_frames_written_total", sse) === PUBLICATIONS * subscribers.sse &&
        d(m, "herald_frames_written_total", ws) === PUBLICATIONS * subscribers.ws &&
        d(m, "herald_publications_received_total", { source: "http" }) >= PUBLICATIONS &&
        d(m, "herald_deliveries_total", sse) >= PUBLICATIONS * subscribers.sse &&
        d(m, "herald_deliveries_total", ws) >= PUBLICATIONS * subscribers.ws &&
        d(m, "herald_bytes_written_total", sse) >= sseClients.reduce((sum, c, i) => sum + c.bytes() - bytesBefore[i], 0) &&
        d(m, "herald_publish_to_write_seconds_count") >= PUBLICATIONS * 5 &&
        d(m, "herald_publish_to_write_seconds_bucket", { le: "1" }) >= PUBLICATIONS * 5,
      "every frame, byte, delivery and publish-to-write observation counted",
    );
    assert.equal(d(m2, "herald_publications_received_total", { source: "http" }), PUBLICATIONS);
    assert.equal(d(m2, "herald_publications_received_total", { source: "redis" }), 0);
    assert.equal(d(m2, "herald_deliveries_total", sse), PUBLICATIONS * subscribers.sse);
    assert.equal(d(m2, "herald_deliveries_total", ws), PUBLICATIONS * subscribers.ws);
    const sseBytesRead = sseClients.reduce((sum, c, i) => sum + c.bytes() - bytesBefore[i], 0);
    assert.equal(d(m2, "herald_bytes_written_total", sse), sseBytesRead, "SSE bytes written = bytes the clients read");
    // WebSocket: bytes on the wire, i.e. each publication message's text plus
    // its RFC 6455 frame header (2 bytes up to 125 bytes of payload, 4 up to 65535).
    const frameBytes = (n) => n + (n < 126 ? 2 : n < 65536 ? 4 : 10);
    const wsWire = wsClients.reduce(
      (sum, c) =>
        sum +
        publicationsOf(c, CHANNEL)
          .filter((p) => p.event === "n")
          .reduce((s, p) => s + frameBytes(Buffer.byteLength(JSON.stringify(p))), 0),
      0,
    );
    assert.equal(d(m2, "herald_bytes_written_total", ws), wsWire, "WebSocket bytes written (frames)");
    // One publish-to-write observation per live delivery, each under 1 s here.
    const count = "herald_publish_to_write_seconds_count";
    assert.equal(m2.get(count) - m1.get(count), PUBLICATIONS * 5);
    const le1 = { le: "1" };
    assert.equal(d(m2, "herald_publish_to_write_seconds_bucket", le1), PUBLICATIONS * 5);
    assert.ok(m2.get("herald_publish_to_write_seconds_sum") > m1.get("herald_publish_to_write_seconds_sum"));
    assert.equal(m2.get("herald_channels"), 1);
    await scrapeUntil((m) => m.get("herald_outbound_buffer_bytes") === 0, "outbound buffers drained");

    const status = await getJson(h.url, "/v1/status");
    assert.deepEqual(status.json.connections, { sse: 3, ws: 2, total: 5 });
    assert.equal(status.json.channels, 1);
    assert.equal(status.json.deliveries, m2.get("herald_deliveries_total", sse) + m2.get("herald_deliveries_total", ws));
    assert.ok(status.json.uptime_seconds > 0);

    // Disconnects by reason: a client that goes away, a client that breaks
    // the WebSocket protocol (binary message: close 1003).
    sseClients[0].destroy();
    await wsClients[0].close();
    const raw = await rawWsConnect(h.port);
    cleanup.push(async () => raw.destroy());
    raw.sendFrame({ opcode: 2, payload: Buffer.from([1, 2, 3]) });
    assert.equal((await raw.closeCode()).code, 1003);
    const m3 = await scrapeUntil(
      (m) =>
        d(m, "herald_disconnects_total", { ...sse, reason: "client" }) === 1 &&
        d(m, "herald_disconnects_total", { ...ws, reason: "client" }) === 1 &&
        d(m, "herald_disconnects_total", { ...ws, reason: "protocol_error" }) === 1 &&
        m.get("herald_connections", sse) <= 2 &&
        m.get("herald_connections", ws) <= 1 &&
        d(m, "herald_connects_total", ws) >= 1,
      "disconnects: sse client, ws client, ws protocol_error (and the connection gauges)",
    );
    assert.equal(m3.get("herald_connections", sse), 2);
    assert.equal(m3.get("herald_connections", ws), 1);
    assert.equal(d(m3, "herald_connects_total", ws), 1);
    for (const reason of ["slow_client", "heartbeat_timeout", "write_timeout", "auth", "shutdown"]) {
      assert.equal(m3.get("herald_disconnects_total", { ...sse, reason }), 0, reason);
    }

    // Recoveries: the cursor of the last event resumes (succeeded); a cursor
    // of an unknown epoch cannot (failed).
    const lastId = sseClients[1].events().at(-1).id;
    await publishOk(h.url, { channel: CHANNEL, event: "n", data: { missed: 1 } });
    const resumed = await rawSse(h.port, `/v1/sse?channel=${CHANNEL}`, { "Last-Event-ID": lastId });
    cleanup.push(async () => resumed.destroy());
    await waitUntil(() => resumed.events().some((e) => e.data.includes("missed")), { what: "the missed publication replayed" });
    const lost = await rawSse(h.port, `/v1/sse?channel=${CHANNEL}`, {
      "Last-Event-ID": makeCursor([{ channel: CHANNEL, epoch: "nosuchepoch", offset: 3 }]),
    });
    cleanup.push(async () => lost.destroy());
    await waitUntil(() => lost.events().some((e) => e.event === "herald.gap"), { what: "a gap for an unknown epoch" });
    const m4 = await scrapeUntil(
      (m) => d(m, "herald_recoveries_total", { result: "succeeded" }) === 1 && d(m, "herald_recoveries_total", { result: "failed" }) >= 1,
      "one recovery succeeded, one failed",
    );
    assert.equal(d(m4, "herald_recoveries_total", { result: "failed" }), 1);

    // HTTP errors by code (the net/wire/errors table).
    assert.equal((await getJson(h.url, "/v1/sse?channel=nope")).status, 400);
    assert.equal((await publish(h.url, { channel: CHANNEL, event: "herald.x", data: 1 })).status, 400);
    assert.equal((await getJson(h.url, "/no/such/route")).status, 404);
    const m5 = await scrapeUntil(
      (m) => ["invalid_channel", "invalid_event", "not_found"].every((code) => d(m, "herald_http_errors_total", { code }) >= 1),
      "the three HTTP errors counted",
    );
    assert.equal(d(m5, "herald_http_errors_total", { code: "invalid_channel" }), 1);
    assert.equal(d(m5, "herald_http_errors_total", { code: "invalid_event" }), 1);
    assert.equal(d(m5, "herald_http_errors_total", { code: "not_found" }), 1);
    const check = await promtoolCheck(m5.text);
    assert.equal(check.code, 0, check.output);
  });

  test("a client that stops reading is counted as slow_client; the outbound gauge returns to 0", { timeout: 60_000 }, async () => {
    const slow = await rawSse(h.port, `/v1/sse?channel=${SLOW_CHANNEL}`);
    cleanup.push(async () => slow.destroy());
    await sseClientsReady([slow], SLOW_CHANNEL);
    slow.pause();
    const m1 = await scrape(h.url);
    const slowClosed = (m) =>
      m.get("herald_disconnects_total", { ...sse, reason: "slow_client" }) -
        m1.get("herald_disconnects_total", { ...sse, reason: "slow_client" }) ===
      1;
    const pad = "s".repeat(60_000);
    let sent = 0;
    let maxOutbound = 0;
    // Loopback kernel buffers take several MiB before Herald's own queue
    // (64 KiB here) fills: publish ~60 KB publications until it is closed.
    for (; sent < 2000; sent += 8) {
      await Promise.all(
        Array.from({ length: 8 }, (_, i) => publishOk(h.url, { channel: SLOW_CHANNEL, event: "big", data: { i, pad } })),
      );
      const m = await scrape(h.url);
      maxOutbound = Math.max(maxOutbound, m.get("herald_outbound_buffer_bytes"));
      if (slowClosed(m)) break;
    }
    const m2 = await scrapeUntil(slowClosed, "the slow client closed as slow_client");
    assert.ok(sent < 2000, "closed before the cap");
    assert.equal(m2.get("herald_channels"), 2);
    const m3 = await scrapeUntil((m) => m.get("herald_outbound_buffer_bytes") === 0, "outbound buffers empty after the close");
    assert.ok(
      m3.get("herald_publications_received_total", { source: "http" }) -
        m1.get("herald_publications_received_total", { source: "http" }) >=
        sent,
    );
    const check = await promtoolCheck(m3.text);
    assert.equal(check.code, 0, check.output);
  });
});

describe("GET /metrics: heartbeat timeouts", { timeout: 30_000 }, () => {
  test("a WebSocket client that answers no ping is counted as heartbeat_timeout", async () => {
    await withHerald(["--ws-ping-interval=1", "--ws-pong-timeout=1"], { stop: "await" }, async (hb) => {
      const raw = await rawWsConnect(hb.port); // never answers pings
      const answering = await wsConnect(hb.url); // the ws package answers them
      await raw.ended; // closed after about 2 s
      const timedOut = (m) => m.get("herald_disconnects_total", { transport: "ws", reason: "heartbeat_timeout" });
      const m = await waitUntil(async () => {
        const s = await scrape(hb.url);
        return timedOut(s) >= 1 && s;
      }, { what: "heartbeat_timeout counted" });
      assert.equal(timedOut(m), 1);
      assert.equal(m.get("herald_connections", { transport: "ws" }), 1, "the client that answers stays");
      assert.ok(raw.frames.items.some((f) => f.opcode === 9), "the server pinged");
      await answering.close();
    });
  });
});
