#!/usr/bin/env node
// Soak run (issue #14 part 6; a benchmark, not CI): one herald under steady
// publishing with connection churn, subscribe/unsubscribe churn and slow
// clients for --minutes (30). Samples the server's RSS, open file
// descriptors, connections and channel actors (GET /metrics) every
// --sample-s seconds; at the end every client is closed and, after the
// channels' history TTL, the figures must come back: RSS within 10 % of its
// value after the warm-up, file descriptors and channel actors to their
// values before the load. Writes <out>.csv, <out>.svg (RSS and fds over
// time) and <out>.json (summary); exit 1 when a check fails.
//
//   node loadtest/soak.mjs [--minutes 30] [--warmup-minutes 2] [--clients 400]
//        [--rate 50] [--out soak] [--herald build/bin/herald]
// Needs `npm ci --prefix tests/e2e` (the `ws` package). Loopback only; it
// stops the herald it started (by PID).
import { spawn } from "node:child_process";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { soakSvg } from "./soak_plot.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..");
const WebSocket = createRequire(path.join(root, "tests/e2e/package.json"))("ws");

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const minutes = Number(args.minutes ?? 30);
const warmupMin = Number(args["warmup-minutes"] ?? 2);
const clients = Number(args.clients ?? 400);
const rate = Number(args.rate ?? 50); // publications per second
const sampleS = Number(args["sample-s"] ?? 10);
const out = args.out ?? "soak";
const bin = args.herald ?? path.join(root, "build/bin/herald");
const TTL = 20; // --history-ttl: channels drain this long after the load
const CHANNELS = 200;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pick = (n) => Math.floor(Math.random() * n);
const channel = (i) => `stream:soak-${i}`;

const server = spawn(bin, ["--port=0", "--host=127.0.0.1", "--insecure", "--max-connections-per-ip=0",
  `--history-ttl=${TTL}`, "--client-max-buffer=65536", "--ws-commands-per-second=0"], { stdio: ["ignore", "pipe", "pipe"] });
let port;
await new Promise((resolve, reject) => {
  let log = "";
  // The "listening on" line may come on either stream.
  const onOutput = (d) => {
    log += d;
    const m = /listening on 127\.0\.0\.1:(\d+)/.exec(log);
    if (m && !port) {
      port = Number(m[1]);
      resolve();
    }
  };
  server.stderr.on("data", onOutput);
  server.stdout.on("data", onOutput);
  server.once("exit", (c) => reject(new Error(`herald exited ${c}: ${log}`)));
});
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

// A fresh connection per scrape (closed after it), so the samples count the
// same fds before and after the load.
function get(pathname) {
  return new Promise((resolve, reject) => {
    http.get({ host: "127.0.0.1", port, path: pathname, agent: false, headers: { connection: "close" } }, (res) => {
      let t = "";
      res.on("data", (c) => (t += c)).on("end", () => resolve(t));
    }).on("error", reject);
  });
}
function publish(body) {
  const data = JSON.stringify(body);
  return new Promise((resolve) => {
    const req = http.request({ host: "127.0.0.1", port, path: "/v1/publish", method: "POST", agent,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(data) } }, (res) => {
      res.resume().on("end", () => resolve(res.statusCode));
    });
    req.on("error", () => resolve(0));
    req.end(data);
  });
}

async function sample(t0) {
  const status = readFileSync(`/proc/${server.pid}/status`, "utf8");
  const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
  const fds = readdirSync(`/proc/${server.pid}/fd`).length;
  const m = await get("/metrics");
  const metric = (re) => Number((re.exec(m) || [0, 0])[1]);
  return { t: (Date.now() - t0) / 1000, rssKiB, fds,
    connections: metric(/^herald_connections\{transport="sse"\} (\S+)$/m) + metric(/^herald_connections\{transport="ws"\} (\S+)$/m),
    channels: metric(/^herald_channels (\S+)$/m) };
}

// -- clients ------------------------------------------------------------------
const live = new Set();
const slow = []; // at most 20 at once: the oldest goes when a new one comes
function openSse({ slow = false } = {}) {
  const qs = [0, 1, 2].map(() => `channel=${channel(pick(CHANNELS))}`).join("&");
  const req = http.get({ host: "127.0.0.1", port, path: `/v1/sse?${qs}` }, (res) => {
    if (slow) res.pause(); // never reads: the server closes it as slow
    else res.resume();
  });
  req.on("error", () => {});
  const c = { close: () => req.destroy() };
  live.add(c);
  req.on("close", () => live.delete(c));
  return c;
}
function openWs() {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/ws`);
  const c = { close: () => ws.terminate(), ws, subs: new Set() };
  ws.on("error", () => {});
  ws.on("open", () => {
    const ch = channel(pick(CHANNELS));
    c.subs.add(ch);
    ws.send(JSON.stringify({ op: "subscribe", channel: ch }));
  });
  live.add(c);
  ws.on("close", () => live.delete(c));
  return c;
}

// Baseline after one connection per I/O shard came and went: a shard makes
// its epoll, eventfd and timerfd with its first connection.
{
  const first = Array.from({ length: 16 }, () => openSse());
  await sleep(1000);
  for (const c of first) c.close();
  await sleep(2000);
}
const t0 = Date.now();
const samples = [await sample(t0)];
const before = samples[0];
const endAt = t0 + minutes * 60_000;
let published = 0;
const pool = [];
for (let i = 0; i < clients; i++) pool.push(i % 2 ? openSse() : openWs());
let stop = false;

const publisher = (async () => {
  while (!stop) {
    const started = Date.now();
    await publish({ channels: [channel(pick(CHANNELS)), channel(pick(CHANNELS))], event: "soak", data: { n: published++, pad: "x".repeat(200) } });
    const wait = 1000 / rate - (Date.now() - started);
    if (wait > 0) await sleep(wait);
  }
})();
const churn = (async () => {
  while (!stop) {
    // connection churn: 2 % of the pool per second; slow clients: 1 per second
    for (let k = 0; k < Math.max(1, clients / 50); k++) {
      const i = pick(pool.length);
      pool[i].close();
      pool[i] = i % 2 ? openSse() : openWs();
    }
    slow.push(openSse({ slow: true }));
    if (slow.length > 20) slow.shift().close();
    // subscribe/unsubscribe churn on WebSocket clients
    for (const c of pool) {
      if (!c.ws || c.ws.readyState !== 1 || Math.random() > 0.1) continue;
      const [old] = c.subs;
      if (old) {
        c.ws.send(JSON.stringify({ op: "unsubscribe", channel: old }));
        c.subs.delete(old);
      }
      const ch = channel(pick(CHANNELS));
      if (!c.subs.has(ch)) {
        c.ws.send(JSON.stringify({ op: "subscribe", channel: ch }));
        c.subs.add(ch);
      }
    }
    await sleep(1000);
  }
})();

let warm;
while (Date.now() < endAt) {
  await sleep(sampleS * 1000);
  const s = await sample(t0);
  samples.push(s);
  if (!warm && s.t >= warmupMin * 60) warm = s;
  console.log(`t=${s.t.toFixed(0)}s rss=${(s.rssKiB / 1024).toFixed(1)}MiB fds=${s.fds} conns=${s.connections} channels=${s.channels} published=${published}`);
}
stop = true;
await Promise.all([publisher, churn]);
for (const c of [...live]) c.close();
agent.destroy(); // the publisher's kept-alive connections
await sleep((TTL + 15) * 1000); // channels expire, the server settles
const after = await sample(t0);
samples.push(after);
server.kill("SIGTERM");
await new Promise((r) => server.once("exit", r));

warm ??= samples[1] ?? before;
const problems = [];
if (after.rssKiB > warm.rssKiB * 1.1) problems.push(`RSS ${after.rssKiB} KiB > 110 % of ${warm.rssKiB} KiB after warm-up`);
if (after.fds > before.fds) problems.push(`fds ${after.fds} > ${before.fds} before the load`);
// Every client is gone and every channel's history has expired: no channel
// actor may be left (the baseline still counts the warm-up probes' channels).
if (after.channels !== 0) problems.push(`channel actors: ${after.channels} left after the load`);
if (after.connections !== 0) problems.push(`connections ${after.connections} left`);

writeFileSync(`${out}.csv`, "t_s,rss_kib,fds,connections,channels\n" + samples.map((s) => `${s.t},${s.rssKiB},${s.fds},${s.connections},${s.channels}`).join("\n") + "\n");
writeFileSync(`${out}.svg`, soakSvg(samples, `soak: ${clients} clients, ${rate} publications/s, ${minutes} min, churn and slow clients`));
const summary = { minutes, clients, rate, published, before, warm, after, problems, pass: problems.length === 0 };
writeFileSync(`${out}.json`, JSON.stringify(summary, null, 2) + "\n");
console.log(JSON.stringify(summary));
process.exit(problems.length ? 1 : 0);
