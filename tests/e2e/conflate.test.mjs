// Overflow policy `conflate` (issue 22 section 4, docs/protocol.md "Overflow
// policy: close or conflate"): a subscriber behind a slow link (a loopback
// proxy throttled to 32 kbit/s) on channels whose class has
// `overflow=conflate` is never disconnected as a slow client: only the
// newest pending publication of each channel stays queued, and the last
// publication of each channel reaches it. The same traffic on a class with
// `overflow=close` still disconnects it.
//
// The traffic is the issue's: 10 publications/s of 1 KiB on each of 3
// channels (about 31 KB/s, eight times what the link carries), for
// PUBLISH_MS. Herald caps the kernel's unsent bytes of a conflated
// connection (--conflate-unsent-bytes), but the link's kernel buffers (the
// proxy's receive buffer: the proxy reads from Herald only as fast as it
// passes bytes on) still hold far more than the few seconds the
// test can wait at 32 kbit/s, so once publishing stopped the test lifts the
// throttle and checks what reaches the client: the last value of each
// channel (conflation must have kept it) and offsets that only go up. That
// conflation happened is checked on herald_conflated_publications_total;
// loadtest/conflate.mjs runs the same for minutes at 32 kbit/s throughout.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { Centrifuge } from "centrifuge";

import { awaitBackgroundStops, cursorPosition, rawSse, sleep, suiteHerald, waitUntil } from "./lib/herald.mjs";
import { counterValue, scrape } from "./lib/metrics.mjs";
import { publishStates } from "./lib/states.mjs";
import { startProxy, startSlowLink } from "./lib/proxy.mjs";
import { sdkClient, subscription } from "./lib/centrifuge.mjs";
import { wsConnect, wsSubscribe } from "./lib/ws.mjs";

const LINK_BYTES_PER_SECOND = 4000; // 32 kbit/s
const PUBLISH_MS = 12_000;
const RATE_PER_CHANNEL = 10; // publications per second
const MAX_BUFFER = 8192; // --client-max-buffer: a small mark, so the test reaches it soon

after(() => awaitBackgroundStops());

/** Slow-client disconnects so far, over both transports. */
async function slowClients(url) {
  let sum = 0;
  for (const transport of ["sse", "ws"])
    sum += await counterValue(url, "herald_disconnects_total", { transport, reason: "slow_client" });
  return sum;
}

/** Disconnects so far, for any reason, over both transports: the series that are not 0. */
async function allDisconnects(url) {
  const m = await scrape(url);
  const seen = {};
  for (const [series, value] of m.series) if (series.startsWith("herald_disconnects_total{") && value > 0) seen[series] = value;
  return seen;
}

/** An SSE subscriber through `proxy`: the last `n` and offsets per channel as it parses them. */
async function sseSubscriber(proxy, channels) {
  const query = channels.map((c) => `channel=${encodeURIComponent(c)}`).join("&");
  const s = await rawSse(proxy.port, `/v1/sse?${query}`);
  return {
    s,
    /** {channel: [n...]} of the publications received, in order. */
    received() {
      // The data names its channel: with conflation, more than one channel's
      // offset may move from one event's cursor to the next.
      const out = Object.fromEntries(channels.map((c) => [c, []]));
      for (const e of s.events()) {
        if (e.event !== "state") continue;
        const d = JSON.parse(e.data);
        out[d.channel].push(d.n);
        // A fresh channel: offset n is the n-th publication; the event's
        // cursor names it, so a reconnect resumes after it (and after every
        // publication conflation dropped before it).
        assert.equal(cursorPosition(e.id, d.channel)?.offset, d.n, `cursor ${e.id} of ${e.data.slice(0, 40)}`);
      }
      return out;
    },
    events: () => s.events(),
  };
}

/** Asserts each list only goes up and ends at `last[channel]`. */
function assertNewestLast(received, last, what) {
  for (const [channel, ns] of Object.entries(received)) {
    for (let i = 1; i < ns.length; i++)
      assert.ok(ns[i] > ns[i - 1], `${what} ${channel}: ${ns[i - 1]} then ${ns[i]}`);
    assert.equal(ns.at(-1), last[channel], `${what} ${channel}: last value received`);
  }
}

describe("overflow=conflate: a subscriber on a 32 kbit/s link", { timeout: 60_000 }, () => {
  const h = suiteHerald([`--client-max-buffer=${MAX_BUFFER}`, "--channel-classes=stream:* overflow=conflate"]);

  test("is never disconnected and gets the last value of each channel (/v1/ws, SSE, centrifuge SDK)", async () => {
    const channels = ["stream:c1", "stream:c2", "stream:c3"];
    const proxy = await startProxy(h.port, { bytesPerSecond: LINK_BYTES_PER_SECOND });
    const base = `http://127.0.0.1:${proxy.port}`;
    const conflatedBefore = await counterValue(h.url, "herald_conflated_publications_total");

    const ws = await wsConnect(base);
    for (const channel of channels) {
      const reply = await wsSubscribe(ws, channel);
      assert.equal(reply.op, "subscribed", JSON.stringify(reply));
      assert.equal(reply.conflated, true, JSON.stringify(reply));
    }
    const sse = await sseSubscriber(proxy, channels);
    await waitUntil(() => sse.events().some((e) => e.event === "herald.cursor"), { what: "herald.cursor" });
    const cursorEvent = sse.events().find((e) => e.event === "herald.cursor");
    assert.deepEqual(JSON.parse(cursorEvent.data), { conflated: channels });

    const sdk = sdkClient(Centrifuge, proxy.port);
    const subs = channels.map((c) => subscription(sdk, c));
    for (const sub of subs) sub.subscribe();
    sdk.connect();
    await waitUntil(() => subs.every((sub) => sub.state === "subscribed"), { what: "SDK subscribed" });

    const last = await publishStates(h.url, channels, { ms: PUBLISH_MS, rate: RATE_PER_CHANNEL });

    // No disconnect while the link was slow: the server closed nobody, and
    // every client is still on its first connection.
    assert.equal(await slowClients(h.url), 0);
    assert.equal(ws.ws.readyState, 1, "the /v1/ws client is still connected");
    assert.equal(sse.s.isEnded(), false, "the SSE stream is still open");
    // The SDK reconnects by itself: one `connecting` (the first connect), no `disconnected`.
    assert.equal(sdk.events.filter((e) => e.name === "disconnected").length, 0, "SDK disconnects");
    assert.equal(sdk.events.filter((e) => e.name === "connecting").length, 1, "SDK reconnects");
    const conflated = (await counterValue(h.url, "herald_conflated_publications_total")) - conflatedBefore;
    assert.ok(conflated > 0, "conflation dropped publications (else the link was not slow enough)");

    // The rest drains at full speed: the newest value of each channel arrives.
    proxy.setRate(null);
    const wsReceived = () =>
      Object.fromEntries(
        channels.map((c) => [c, ws.inbox.items.filter((m) => m.op === "publication" && m.channel === c).map((m) => m.data.n)]),
      );
    const sdkReceived = () => Object.fromEntries(channels.map((c, i) => [c, subs[i].pubs.map((p) => p.data.n)]));
    await waitUntil(
      () =>
        channels.every(
          (c) => wsReceived()[c].at(-1) === last[c] && sse.received()[c].at(-1) === last[c] && sdkReceived()[c].at(-1) === last[c],
        ),
      { timeoutMs: 8000, what: "the last value of every channel on every client" },
    ).catch(() => {});
    assertNewestLast(wsReceived(), last, "/v1/ws");
    assertNewestLast(sse.received(), last, "SSE");
    assertNewestLast(sdkReceived(), last, "SDK");
    // Offsets jumped (conflation), with no gap event anywhere.
    assert.equal(ws.inbox.items.filter((m) => m.op === "gap").length, 0);
    assert.equal(sse.events().filter((e) => e.event === "herald.gap").length, 0);
    assert.equal(await slowClients(h.url), 0);

    sdk.disconnect();
    await ws.close();
    sse.s.destroy();
    await proxy.close();
  });
});

describe("overflow=close: the same subscriber on the same link", { timeout: 60_000 }, () => {
  // The subscriber also holds one conflated channel (never published to):
  // its connection gets the same small kernel buffer (--conflate-unsent-bytes)
  // as in the suite above, so only the policy of the busy channels differs.
  // What conflation cannot drop (their publications) passes the mark: closed.
  const h = suiteHerald([
    `--client-max-buffer=${MAX_BUFFER}`,
    "--channel-classes=stream:* overflow=close; stream:quiet overflow=conflate",
  ]);

  test("is disconnected as a slow client (/v1/ws, SSE), also with a conflated channel beside", async () => {
    const channels = ["stream:d1", "stream:d2", "stream:d3"];
    const proxy = await startProxy(h.port, { bytesPerSecond: LINK_BYTES_PER_SECOND });
    const ws = await wsConnect(`http://127.0.0.1:${proxy.port}`);
    for (const channel of channels) {
      const reply = await wsSubscribe(ws, channel);
      assert.equal(reply.op, "subscribed");
      assert.equal(reply.conflated, undefined);
    }
    assert.equal((await wsSubscribe(ws, "stream:quiet")).conflated, true);
    const sse = await sseSubscriber(proxy, [...channels, "stream:quiet"]);
    await waitUntil(() => sse.events().some((e) => e.event === "herald.cursor"), { what: "herald.cursor" });
    assert.deepEqual(JSON.parse(sse.events().find((e) => e.event === "herald.cursor").data), {
      conflated: ["stream:quiet"],
    });

    // Publishes until both are closed (18 s at most): the link's kernel
    // buffers fill first, then Herald's queue passes the mark.
    let closedBoth = false;
    let publishing = true;
    const watcher = (async () => {
      while (publishing && !closedBoth) {
        await sleep(500);
        closedBoth = (await slowClients(h.url)) >= 2;
      }
    })();
    await publishStates(h.url, channels, { ms: 18_000, rate: RATE_PER_CHANNEL, stop: () => closedBoth });
    publishing = false;
    await watcher;
    const slow = await slowClients(h.url);
    assert.equal(slow, 2, "both subscribers closed as slow clients");
    assert.equal(await counterValue(h.url, "herald_conflated_publications_total"), 0);
    proxy.setRate(null); // what the proxy still holds reaches the clients
    const closed = await Promise.race([ws.closed, sleep(5000).then(() => null)]);
    assert.ok(closed, "the /v1/ws client was closed");
    await Promise.race([sse.s.ended, sleep(5000)]);
    assert.ok(sse.s.isEnded(), "the SSE stream ended");
    await proxy.close();
  });
});

describe("overflow=conflate on a slow link: pongs and writes later than their timeouts", { timeout: 60_000 }, () => {
  // A ping every second and 4-s pong and write timeouts: on a 32 kbit/s link
  // the pong of a conflated subscriber comes back only after what the link
  // still carries (the queue, 1 KiB unsent, the link's 8 KiB: a few seconds),
  // and one write takes longer than 4 s. The peer
  // keeps acknowledging bytes, so it is not closed (docs/protocol.md
  // "Overflow policy"). The link is slow_link.py: a narrow link's segments
  // and a small receive buffer, over which the peer acknowledges bytes at
  // least every 1.5 s (loopback's 64 KiB segments and large buffers stall a
  // slow reader's window for many seconds at a time).
  const h = suiteHerald([
    `--client-max-buffer=${MAX_BUFFER}`,
    "--channel-classes=stream:* overflow=conflate",
    "--ws-ping-interval=1",
    "--ws-pong-timeout=4",
    "--write-timeout=4",
  ]);

  test("a reading subscriber is not closed (/v1/ws, SSE, centrifuge SDK)", async () => {
    const channels = ["stream:e1", "stream:e2", "stream:e3"];
    const link = await startSlowLink(h.port, LINK_BYTES_PER_SECOND);
    const ws = await wsConnect(`http://127.0.0.1:${link.port}`);
    for (const channel of channels) assert.equal((await wsSubscribe(ws, channel)).conflated, true);
    const sse = await sseSubscriber(link, channels);
    await waitUntil(() => sse.events().some((e) => e.event === "herald.cursor"), { what: "herald.cursor" });
    const sdk = sdkClient(Centrifuge, link.port);
    const subs = channels.map((c) => subscription(sdk, c));
    for (const sub of subs) sub.subscribe();
    sdk.connect();
    await waitUntil(() => subs.every((sub) => sub.state === "subscribed"), { what: "SDK subscribed" });
    const conflatedBefore = await counterValue(h.url, "herald_conflated_publications_total");

    const last = await publishStates(h.url, channels, { ms: 10_000, rate: RATE_PER_CHANNEL });
    assert.deepEqual(await allDisconnects(h.url), {}, "nobody was closed, for any reason");
    assert.ok((await counterValue(h.url, "herald_conflated_publications_total")) > conflatedBefore, "conflated");

    // The backlog drains at the link's rate (about eight seconds).
    const wsLast = (c) => ws.inbox.items.filter((m) => m.op === "publication" && m.channel === c).at(-1)?.data.n;
    await waitUntil(
      () =>
        channels.every(
          (c, i) => wsLast(c) === last[c] && sse.received()[c].at(-1) === last[c] && subs[i].pubs.at(-1)?.data.n === last[c],
        ),
      { timeoutMs: 25_000, intervalMs: 200, what: "the last value of every channel on every client" },
    );
    assert.deepEqual(await allDisconnects(h.url), {});
    assert.equal(ws.ws.readyState, 1);
    assert.equal(sse.s.isEnded(), false);
    assert.equal(sdk.events.filter((e) => e.name === "connecting").length, 1, "SDK reconnects");

    sdk.disconnect();
    await ws.close();
    sse.s.destroy();
    await link.close();
  });
});
