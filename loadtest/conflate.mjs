// Conflation benchmark (issue 22 section 4, "Targets"): subscribers behind a
// loopback proxy throttled to 32 kbit/s each, 10 publications/s of 1 KiB on
// each of 3 channels whose class has `overflow=conflate`, for 5 minutes.
// Target: zero disconnects, the last value received per channel equals the
// last published, server memory bounded. One subscriber per transport:
// /v1/ws (the `ws` package), SSE (a raw socket, parsed here) and the real
// `centrifuge` SDK (JSON), each through its own throttled connection
// (tests/e2e/lib/slow_link.py, which looks like a narrow link rather than
// loopback: MSS 1400, a small receive buffer; LINK=node uses
// tests/e2e/lib/proxy.mjs instead). The throttle stays on while the queued
// data drains (DRAIN_SECONDS at most).
// Not part of the tests.
//
// usage: node loadtest/conflate.mjs        (from the repository, after a build)
//   env: HERALD_BIN (build/bin/herald), SECONDS (300), LINK_BPS (4000 bytes/s),
//        POLICY (conflate | close), MAX_BUFFER (--client-max-buffer, 65536),
//        DRAIN_SECONDS (120), TRANSPORTS (ws,sse,centrifuge), EXTRA_ARGS (more
//        herald options, space-separated), LINK (python | node)
// needs: npm ci --prefix tests/e2e (for the helpers' imports).
// Prints one JSON report on stdout; progress on stderr.

import crypto from "node:crypto";

import { publishOk, rawSse, sleep, startHerald } from "../tests/e2e/lib/herald.mjs";
import { ENCODINGS, sdkClient, subscription } from "../tests/e2e/lib/centrifuge.mjs";
import { startProxy, startSlowLink } from "../tests/e2e/lib/proxy.mjs";
import { wsConnect, wsSubscribe } from "../tests/e2e/lib/ws.mjs";

const SECONDS = Number(process.env.SECONDS || 300);
const LINK_BPS = Number(process.env.LINK_BPS || 4000);
const POLICY = process.env.POLICY || "conflate";
const MAX_BUFFER = Number(process.env.MAX_BUFFER || 65536);
const DRAIN_SECONDS = Number(process.env.DRAIN_SECONDS || 120);
const TRANSPORTS = (process.env.TRANSPORTS || "ws,sse,centrifuge").split(",");
const EXTRA_ARGS = (process.env.EXTRA_ARGS || "").split(" ").filter(Boolean);
const LINK = process.env.LINK || "python";
const RATE_PER_CHANNEL = 10;
const CHANNELS = ["stream:conflate1", "stream:conflate2", "stream:conflate3"];
// Incompressible (the SDK's `ws` offers permessage-deflate, which Herald
// accepts): 1000 characters of base64 from random bytes, new for each.
const pad = () => crypto.randomBytes(750).toString("base64");

const log = (...a) => console.error(new Date().toISOString().slice(11, 19), ...a);

async function metric(url, re) {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(re)) sum += Number(m[1]);
  return sum;
}

const h = await startHerald([
  `--client-max-buffer=${MAX_BUFFER}`,
  `--channel-classes=stream:* overflow=${POLICY}`,
  ...EXTRA_ARGS,
]);
log(`herald pid ${h.pid} on ${h.port}, policy ${POLICY}, mark ${MAX_BUFFER} B, link ${LINK_BPS} B/s`);
const rssStart = h.rssKb();

// -- subscribers ---------------------------------------------------------------

const clients = {};
const proxies = [];
/** A slow link to herald: {port, bytesPassed(), close()}. */
async function throttled() {
  if (LINK === "node") {
    const p = await startProxy(h.port, { bytesPerSecond: LINK_BPS });
    proxies.push(p);
    return p;
  }
  const p = await startSlowLink(h.port, LINK_BPS);
  proxies.push(p);
  return p;
}

if (TRANSPORTS.includes("ws")) {
  const proxy = await throttled();
  const ws = await wsConnect(`http://127.0.0.1:${proxy.port}`);
  let closedWith = null;
  ws.closed.then((c) => (closedWith = c));
  for (const c of CHANNELS) {
    const r = await wsSubscribe(ws, c);
    if (r.op !== "subscribed") throw new Error(`subscribe: ${JSON.stringify(r)}`);
  }
  clients.ws = {
    proxy,
    disconnects: () => (closedWith ? 1 : 0),
    closed: () => closedWith,
    last: (c) => {
      for (let i = ws.inbox.items.length - 1; i >= 0; i--) {
        const m = ws.inbox.items[i];
        if (m.op === "publication" && m.channel === c) return m.data.n;
      }
      return 0;
    },
    received: () => ws.inbox.items.filter((m) => m.op === "publication").length,
    gaps: () => ws.inbox.items.filter((m) => m.op === "gap").length,
    close: () => ws.close(),
  };
}

if (TRANSPORTS.includes("sse")) {
  const proxy = await throttled();
  const query = CHANNELS.map((c) => `channel=${encodeURIComponent(c)}`).join("&");
  const s = await rawSse(proxy.port, `/v1/sse?${query}`);
  // Parsed incrementally: the text of a long run is large.
  const last = Object.fromEntries(CHANNELS.map((c) => [c, 0]));
  let received = 0;
  let gaps = 0;
  let buffer = "";
  let headDone = false;
  s.socket.on("data", (d) => {
    buffer += d.toString("utf8");
    if (!headDone) {
      const end = buffer.indexOf("\r\n\r\n");
      if (end < 0) return;
      buffer = buffer.slice(end + 4);
      headDone = true;
    }
    let at;
    while ((at = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      const fields = {};
      for (const line of block.split("\n")) {
        const colon = line.indexOf(":");
        if (colon <= 0) continue;
        fields[line.slice(0, colon)] = line.slice(colon + 1).trimStart();
      }
      if (fields.event === "herald.gap") gaps += 1;
      if (fields.event === "state") {
        const d = JSON.parse(fields.data);
        last[d.channel] = d.n;
        received += 1;
      }
    }
  });
  clients.sse = {
    proxy,
    disconnects: () => (s.isEnded() ? 1 : 0),
    closed: () => (s.isEnded() ? "ended" : null),
    last: (c) => last[c],
    received: () => received,
    gaps: () => gaps,
    close: () => s.destroy(),
  };
}

if (TRANSPORTS.includes("centrifuge")) {
  const proxy = await throttled();
  const sdk = sdkClient(ENCODINGS[0][1], proxy.port);
  const subs = CHANNELS.map((c) => subscription(sdk, c));
  for (const sub of subs) sub.subscribe();
  sdk.connect();
  while (!subs.every((sub) => sub.state === "subscribed")) await sleep(20);
  clients.centrifuge = {
    proxy,
    // The SDK reconnects by itself: every `connecting` after the first connect is a drop.
    disconnects: () =>
      sdk.events.filter((e) => e.name === "disconnected").length +
      Math.max(0, sdk.events.filter((e) => e.name === "connecting").length - 1),
    closed: () => sdk.events.filter((e) => e.name === "disconnected" || e.name === "connecting").map((e) => e.ctx),
    last: (c) => subs[CHANNELS.indexOf(c)].pubs.at(-1)?.data.n ?? 0,
    received: () => subs.reduce((n, sub) => n + sub.pubs.length, 0),
    gaps: () => subs.reduce((n, sub) => n + sub.events.filter((e) => e.name === "unsubscribed").length, 0),
    close: () => sdk.disconnect(),
  };
}

// -- traffic --------------------------------------------------------------------

const published = Object.fromEntries(CHANNELS.map((c) => [c, 0]));
let rssMax = h.rssKb();
const samples = [];
const start = Date.now();
let n = 0;
let nextReport = start + 10_000;
while (Date.now() - start < SECONDS * 1000) {
  n += 1;
  const due = start + (n * 1000) / RATE_PER_CHANNEL;
  await Promise.all(
    CHANNELS.map(async (channel) => {
      await publishOk(h.url, { channel, event: "state", data: { channel, n, pad: pad() } });
      published[channel] = n;
    }),
  );
  rssMax = Math.max(rssMax, h.rssKb());
  if (Date.now() >= nextReport) {
    nextReport += 10_000;
    const s = {
      t: Math.round((Date.now() - start) / 1000),
      rss_kb: h.rssKb(),
      outbound_bytes: await metric(h.url, /^herald_outbound_buffer_bytes (\d+)/gm),
      conflated: await metric(h.url, /^herald_conflated_publications_total (\d+)/gm),
      disconnects: Object.fromEntries(Object.entries(clients).map(([k, c]) => [k, c.disconnects()])),
    };
    samples.push(s);
    log(JSON.stringify(s));
  }
  await sleep(Math.max(0, due - Date.now()));
}
const publishEnd = Date.now();
log("publishing stopped; draining at the link's rate");

// -- drain (throttle kept) --------------------------------------------------------

const caughtUp = (c) => CHANNELS.every((ch) => c.last(ch) === published[ch]);
const drainStart = Date.now();
while (Date.now() - drainStart < DRAIN_SECONDS * 1000 && !Object.values(clients).every((c) => caughtUp(c) || c.disconnects() > 0)) {
  await sleep(250);
}
const drainSeconds = (Date.now() - drainStart) / 1000;

const report = {
  command: `SECONDS=${SECONDS} LINK_BPS=${LINK_BPS} POLICY=${POLICY} MAX_BUFFER=${MAX_BUFFER} node loadtest/conflate.mjs`,
  seconds: Math.round((publishEnd - start) / 1000),
  publications_per_channel: published[CHANNELS[0]],
  policy: POLICY,
  client_max_buffer: MAX_BUFFER,
  link_bytes_per_second: LINK_BPS,
  drain_seconds: drainSeconds,
  clients: Object.fromEntries(
    Object.entries(clients).map(([k, c]) => [
      k,
      {
        disconnects: c.disconnects(),
        closed: c.closed(),
        received: c.received(),
        gaps: c.gaps(),
        last_received: Object.fromEntries(CHANNELS.map((ch) => [ch, c.last(ch)])),
        last_equals_published: caughtUp(c),
        bytes_through_link: c.proxy.bytesPassed(),
      },
    ]),
  ),
  last_published: published,
  server: {
    rss_kb_start: rssStart,
    rss_kb_max: rssMax,
    rss_kb_end: h.rssKb(),
    conflated_publications: await metric(h.url, /^herald_conflated_publications_total (\d+)/gm),
    disconnects_by_reason: Object.fromEntries(
      [...(await (await fetch(`${h.url}/metrics`)).text()).matchAll(/^herald_disconnects_total\{transport="(\w+)",reason="(\w+)"\} (\d+)/gm)]
        .filter((m) => Number(m[3]) > 0)
        .map((m) => [`${m[1]}/${m[2]}`, Number(m[3])]),
    ),
  },
  samples,
  server_log_closes: h.log().split("\n").filter((l) => /closed|slow|timeout/.test(l)).slice(-20),
};
for (const c of Object.values(clients)) await c.close();
await sleep(2000); // slow_link.py reports a connection's bytes when it ends
for (const [k, c] of Object.entries(clients)) report.clients[k].bytes_through_link = c.proxy.bytesPassed();
console.log(JSON.stringify(report, null, 2));
for (const p of proxies) await p.close();
await h.stop();
process.exit(0);
