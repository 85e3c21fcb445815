// Slow links keep both promises (issue 38, docs/protocol.md "Overflow policy: close or
// conflate" and "Slow-client close"). Subscribers behind a 32 kbit/s link with small socket
// buffers (lib/slow_link.py: a narrow link's segments and a small receive window, the link a
// phone has on a weak cell), 10 per client kind: `eventsource`, `ws` on /v1/ws and the
// `centrifuge` SDK, all through the link, and never un-throttled:
//
// 1. Conflation: 3 conflated channels at 50 publications/s of 1 KiB for 20 s. Within 3 s after
//    publishing stops, each subscriber's last publication on each channel is the last one
//    published there, at the default --client-max-buffer and at 256 KiB; positions only increase;
//    no gap signal for the skipped ones; fast subscribers of the same channels get everything.
// 2. Slow-client close: the same link on an `overflow=close` channel: every subscriber, still
//    reading, receives the documented signal before the close (SSE `herald.gap` slow_client,
//    WebSocket 1013, Centrifugo 3008, after which the SDK resubscribes and recovers).
// Both: herald's resident memory grows by less than 64 MiB for the 30 subscribers.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { Centrifuge } from "centrifuge";

import { awaitBackgroundStops, publishOk, rawSse, sleep, suiteHerald, waitUntil } from "./lib/herald.mjs";
import { eventSourceClient } from "./lib/eventsource.mjs";
import { counterValue } from "./lib/metrics.mjs";
import { publishStates } from "./lib/states.mjs";
import { startSlowLink } from "./lib/proxy.mjs";
import { sdkClient, subscription } from "./lib/centrifuge.mjs";
import { wsConnect, wsSubscribe } from "./lib/ws.mjs";

const LINK_BYTES_PER_SECOND = 4000; // 32 kbit/s
const RATE_PER_CHANNEL = 50; // publications per second
const PUBLISH_MS = 20_000;
const PER_KIND = 10; // subscribers of each client kind: 30 in all
// Under AddressSanitizer (HERALD_TEST_SANITIZED=1, set by the ctest registration of a
// sanitized build) freed memory sits in ASan's quarantine (256 MiB by default) and every
// allocation carries redzones, so the bound says nothing about Herald there: it is relaxed by
// the quarantine, as in slow.test.mjs. Everything else is checked as usual.
const SANITIZED = process.env.HERALD_TEST_SANITIZED === "1";
const RSS_GROWTH_LIMIT_KIB = (SANITIZED ? 64 + 256 : 64) * 1024;

after(() => awaitBackgroundStops());

/** Samples herald's resident set size every 250 ms; `peak()` the largest seen (KiB). */
function rssSampler(h) {
  let peak = h.rssKb();
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, h.rssKb());
    } catch {}
  }, 250);
  return { peak: () => peak, stop: () => clearInterval(timer) };
}

/** `count` EventSource clients of `channels`, each recording {channel: [n...]} of what it received. */
async function eventSources(base, channels, count) {
  const query = channels.map((c) => `channel=${encodeURIComponent(c)}`).join("&");
  const out = [];
  for (let i = 0; i < count; i++) {
    const c = eventSourceClient(`${base}/v1/sse?${query}`, ["state", "herald.gap", "herald.cursor"]);
    out.push({
      kind: "SSE",
      es: c.es,
      get got() {
        const got = Object.fromEntries(channels.map((ch) => [ch, []]));
        for (const e of c.inbox.items.filter((m) => m.type === "state")) {
          const d = JSON.parse(e.data);
          got[d.channel].push(d.n);
        }
        return got;
      },
      named: (type) => c.inbox.items.filter((m) => m.type === type),
      errors: c.errors,
    });
  }
  await waitUntil(() => out.every((r) => r.named("herald.cursor").length > 0), {
    what: "every EventSource open",
    timeoutMs: 10_000,
  });
  return out;
}

async function wsClients(base, channels, count) {
  const out = [];
  for (let i = 0; i < count; i++) {
    const ws = await wsConnect(base);
    for (const channel of channels) {
      const reply = await wsSubscribe(ws, channel);
      assert.equal(reply.op, "subscribed", JSON.stringify(reply));
    }
    out.push({
      kind: "/v1/ws",
      ws,
      get got() {
        return Object.fromEntries(
          channels.map((c) => [c, ws.inbox.items.filter((m) => m.op === "publication" && m.channel === c).map((m) => m.data.n)]),
        );
      },
      gaps: () => ws.inbox.items.filter((m) => m.op === "gap").length,
    });
  }
  return out;
}

async function sdkClients(port, channels, count, subOpts = {}) {
  const out = [];
  for (let i = 0; i < count; i++) {
    const sdk = sdkClient(Centrifuge, port, { timeout: 10_000 });
    const subs = channels.map((c) => subscription(sdk, c, subOpts));
    for (const sub of subs) sub.subscribe();
    sdk.connect();
    out.push({
      kind: "SDK",
      sdk,
      subs,
      get got() {
        return Object.fromEntries(channels.map((c, j) => [c, subs[j].pubs.map((p) => p.data.n)]));
      },
    });
  }
  await waitUntil(() => out.every((c) => c.subs.every((s) => s.state === "subscribed")), {
    what: "every SDK client subscribed",
    timeoutMs: 15_000,
  });
  return out;
}

/** Asserts each list only goes up; returns the subscribers whose last value is not `last` yet. */
function behind(subscribers, last) {
  const late = [];
  for (const s of subscribers)
    for (const [channel, ns] of Object.entries(s.got)) {
      for (let i = 1; i < ns.length; i++) assert.ok(ns[i] > ns[i - 1], `${s.kind} ${channel}: ${ns[i - 1]} then ${ns[i]}`);
      if (ns.at(-1) !== last[channel]) late.push(`${s.kind} ${channel}: ${ns.at(-1)} of ${last[channel]}`);
    }
  return late;
}

for (const buffer of [null, 256 * 1024]) {
  const bufferArgs = buffer === null ? [] : [`--client-max-buffer=${buffer}`];
  const what = buffer === null ? "the default --client-max-buffer" : "--client-max-buffer=262144";

  describe(`overflow=conflate on a 32 kbit/s link, ${what}`, { timeout: 110_000 }, () => {
    const h = suiteHerald([...bufferArgs, "--channel-classes=stream:* overflow=conflate; stream:ordered overflow=close"]);

    test("every slow subscriber holds the newest state within 3 s of the last publish; fast ones get all", async () => {
      const channels = ["stream:k1", "stream:k2", "stream:k3"];
      // A channel of policy close beside the conflated ones, on one subscriber of each kind:
      // its publications arrive all, once, in order.
      const ordered = "stream:ordered";
      const link = await startSlowLink(h.port, LINK_BYTES_PER_SECOND);
      const base = `http://127.0.0.1:${link.port}`;
      const rssBefore = h.rssKb();
      const rss = rssSampler(h);
      const conflatedBefore = await counterValue(h.url, "herald_conflated_publications_total");

      const everyone = [];
      try {
      const slow = [
        ...(await eventSources(base, channels, PER_KIND - 1)),
        ...(await wsClients(base, channels, PER_KIND - 1)),
        ...(await sdkClients(link.port, channels, PER_KIND - 1)),
        ...(await eventSources(base, [...channels, ordered], 1)),
        ...(await wsClients(base, [...channels, ordered], 1)),
        ...(await sdkClients(link.port, [...channels, ordered], 1)),
      ];
      const mixed = slow.filter((s) => ordered in s.got);
      // Fast subscribers of the same channels, straight to herald.
      const fastWs = await wsClients(h.url, channels, 1);
      const fastSse = await eventSources(h.url, channels, 1);
      everyone.push(...slow, ...fastWs, ...fastSse);

      let publishing = true;
      let orderedLast = 0;
      const orderedPublisher = (async () => {
        while (publishing) {
          const n = orderedLast + 1;
          await publishOk(h.url, { channel: ordered, event: "state", data: { channel: ordered, n } });
          orderedLast = n;
          await sleep(200);
        }
      })();
      const last = await publishStates(h.url, channels, { ms: PUBLISH_MS, rate: RATE_PER_CHANNEL });
      publishing = false;
      await orderedPublisher;
      last[ordered] = orderedLast;
      const stopped = Date.now();
      const late = await waitUntil(() => behind(slow, last).length === 0, {
        timeoutMs: 3000,
        intervalMs: 50,
        what: "the last publication of every channel on every slow subscriber",
      }).then(
        () => [],
        () => behind(slow, last),
      );
      const took = Date.now() - stopped;
      rss.stop();
      assert.deepEqual(late, [], `within 3 s of the last publish (checked after ${took} ms)`);

      const conflated = (await counterValue(h.url, "herald_conflated_publications_total")) - conflatedBefore;
      assert.ok(conflated > 0, "conflation dropped publications (else the link was not slow)");
      // No gap signal for what was skipped, no close, no reconnect.
      for (const s of slow) {
        if (s.kind === "SSE") {
          assert.equal(s.named("herald.gap").length, 0, "SSE gap events");
          assert.deepEqual(s.errors, [], "SSE errors (reconnects)");
        } else if (s.kind === "/v1/ws") {
          assert.equal(s.gaps(), 0, "/v1/ws gaps");
          assert.equal(s.ws.ws.readyState, 1, "/v1/ws still open");
        } else {
          assert.equal(s.sdk.events.filter((e) => e.name === "connecting").length, 1, "SDK reconnects");
        }
      }
      for (const s of mixed)
        assert.deepEqual(s.got[ordered], Array.from({ length: orderedLast }, (_, i) => i + 1), `${s.kind} ${ordered}: all, once, in order`);
      // Fast subscribers: every publication, once, in order.
      await waitUntil(() => behind([...fastWs, ...fastSse], last).length === 0, { what: "fast subscribers", timeoutMs: 5000 });
      for (const s of [...fastWs, ...fastSse])
        for (const [channel, ns] of Object.entries(s.got))
          assert.deepEqual(ns, Array.from({ length: last[channel] }, (_, i) => i + 1), `fast ${s.kind} ${channel}`);

      const growth = rss.peak() - rssBefore;
      assert.ok(growth < RSS_GROWTH_LIMIT_KIB, `RSS grew by ${growth} KiB`);

      } finally {
        // Also after a failed assertion: reconnecting clients would keep the test alive.
        rss.stop();
        for (const s of everyone) {
          if (s.es) s.es.close();
          if (s.ws) await s.ws.close();
          if (s.sdk) s.sdk.disconnect();
        }
        await link.close();
      }
    });
  });
}

describe("overflow=close on the same link: the slow-client signal reaches a client that still reads", { timeout: 110_000 }, () => {
  // A small mark, so that the queue passes it soon after the link's buffers fill; a short
  // history, so that the SDK's recovery after 3008 fits the mark. Every subscriber also holds a
  // conflated channel (never published to): its connection's kernel then takes little
  // (--conflate-unsent-bytes), as a phone's link does, so what Herald holds in flight matters.
  const h = suiteHerald([
    "--client-max-buffer=65536",
    "--channel-classes=stream:* overflow=close history-size=20; stream:quiet overflow=conflate",
  ]);

  test("SSE herald.gap slow_client, /v1/ws 1013, Centrifugo 3008 then resubscribed and recovered", async () => {
    const busy = ["stream:m1", "stream:m2", "stream:m3"];
    const channels = [...busy, "stream:quiet"];
    const link = await startSlowLink(h.port, LINK_BYTES_PER_SECOND);
    const base = `http://127.0.0.1:${link.port}`;
    const rssBefore = h.rssKb();
    const rss = rssSampler(h);

    const sse = [];
    let ws = [];
    let sdk = [];
    try {
    // SSE through a raw socket: the bytes before the end of the stream are what the client read.
    const query = channels.map((c) => `channel=${encodeURIComponent(c)}`).join("&");
    for (let i = 0; i < PER_KIND; i++) sse.push(await rawSse(link.port, `/v1/sse?${query}`));
    await waitUntil(() => sse.every((s) => s.events().some((e) => e.event === "herald.cursor")), {
      what: "every SSE stream open",
      timeoutMs: 10_000,
    });
    ws = await wsClients(base, channels, PER_KIND);
    sdk = await sdkClients(link.port, channels, PER_KIND);

    const sdkClosedSlow = (c) => c.sdk.events.some((e) => e.name === "connecting" && e.ctx.code === 3008);
    const allClosed = () =>
      sse.every((s) => s.isEnded()) && ws.every((c) => c.ws.ws.readyState === 3) && sdk.every(sdkClosedSlow);
    await publishStates(h.url, busy, { ms: 40_000, rate: RATE_PER_CHANNEL, stop: allClosed });
    // Every client got its signal; the link was never lifted.
    await waitUntil(allClosed, { what: "every client closed", timeoutMs: 40_000, intervalMs: 200 }).catch(() => {});
    rss.stop();
    const report = {
      sse: sse.map((s) => (s.isEnded() ? s.events().at(-1)?.event : "open")),
      ws: await Promise.all(ws.map(async (c) => (c.ws.ws.readyState === 3 ? (await c.ws.closed)?.code : "open"))),
      sdk: sdk.map((c) => c.sdk.events.filter((e) => e.name === "connecting").map((e) => e.ctx.code)),
    };
    for (const s of sse) {
      assert.ok(s.isEnded(), `SSE ended: ${JSON.stringify(report)}`);
      const events = s.events();
      const final = events.at(-1);
      assert.equal(final?.event, "herald.gap", `SSE's last event: ${JSON.stringify(report.sse)}`);
      assert.equal(JSON.parse(final.data).reason, "slow_client");
    }
    for (const c of ws) {
      const closed = await c.ws.closed;
      assert.equal(closed?.code, 1013, `/v1/ws close: ${JSON.stringify(report.ws)}`);
    }
    for (const c of sdk) assert.ok(sdkClosedSlow(c), `SDK saw 3008: ${JSON.stringify(report.sdk)}`);
    const slowCloses =
      (await counterValue(h.url, "herald_disconnects_total", { transport: "sse", reason: "slow_client" })) +
      (await counterValue(h.url, "herald_disconnects_total", { transport: "ws", reason: "slow_client" }));
    assert.ok(slowCloses >= 3 * PER_KIND, `slow_client closes counted: ${slowCloses}`);

    // The SDK reconnects by itself (the link is still 32 kbit/s) and resubscribes with recovery.
    await waitUntil(
      () => sdk.every((c) => c.subs.every((sub) => sub.events.filter((e) => e.name === "subscribed").length >= 2)),
      { what: "every SDK subscription subscribed again", timeoutMs: 40_000, intervalMs: 200 },
    );
    for (const c of sdk)
      for (const sub of c.subs)
        assert.equal(sub.events.filter((e) => e.name === "subscribed")[1].ctx.wasRecovering, true, "recovering");

    const growth = rss.peak() - rssBefore;
    assert.ok(growth < RSS_GROWTH_LIMIT_KIB, `RSS grew by ${growth} KiB`);
    } finally {
      rss.stop();
      for (const s of sse) s.socket.destroy();
      for (const c of ws) c.ws.ws.terminate();
      for (const c of sdk) c.sdk.disconnect();
      await link.close();
    }
  });
});
