// Rolling-restart benchmark (issue #24, "Staggered drain"): one Redis, three
// Herald instances behind two HAProxy processes (docker/haproxy.cfg holds
// 9,000 proxied connections a process under the 20,000-file limit),
// herald-loadtest holding CONNECTIONS subscribers (SSE and WebSocket mixed,
// spread over both proxies) while publishing RATE publications/s; then one
// instance gets SIGTERM and drains its connections over
// --shutdown-drain-window. Every 100 ms the two other instances'
// `herald_connects_total` (GET /metrics) is sampled: the report gives the
// highest number of connections they accepted in any 1-s window against
// (the drained instance's connections / window) x 1.5, and the loadtest's
// loss and duplicates (its clients resume through the proxies with their
// positions). Not part of the tests; takes about a minute.
//
// usage: node loadtest/rolling-restart.mjs   (from the repository, after a build)
//   env: HERALD_BIN (build/bin/herald), LOADTEST_BIN (build/bin/herald-loadtest),
//        CONNECTIONS (18000), RATE (100), SECONDS (40), DRAIN_MS (2000)
// needs: redis-server, haproxy, npm ci --prefix tests/e2e (for the helpers' imports).

import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { startCluster, startHaproxy, startRedis, tempDir } from "../tests/e2e/cluster/lib.mjs";
import { sleep } from "../tests/e2e/lib/herald.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const LOADTEST = process.env.LOADTEST_BIN || path.join(root, "build/bin/herald-loadtest");
const N = Number(process.env.CONNECTIONS || 18000);
const RATE = Number(process.env.RATE || 100);
const SECONDS = Number(process.env.SECONDS || 40);
const DRAIN_MS = Number(process.env.DRAIN_MS || 2000);

async function connects(h) {
  const text = await (await fetch(`${h.url}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(/^herald_connects_total\{[^}]*\} (\d+)/gm)) sum += Number(m[1]);
  return sum;
}

async function openConnections(h) {
  return (await (await fetch(`${h.url}/healthz`)).json()).connections;
}

const redis = await startRedis();
const redisUrl = `redis://127.0.0.1:${redis.port}`;
const hs = await startCluster(redisUrl, 3, {
  via: "flag",
  args: ["--max-connections-per-ip=0", `--shutdown-drain-window=${DRAIN_MS}`, "--shutdown-timeout=10"],
});
const backends = hs.map((h) => `127.0.0.1:${h.port}`);
const lbs = [await startHaproxy(backends), await startHaproxy(backends)];
const json = path.join(tempDir("herald-rolling-"), "loadtest.json");
const started = Date.now();
const lt = execFile(
  LOADTEST,
  [
    "--target", lbs.map((lb) => `127.0.0.1:${lb.port}`).join(","),
    "--publish-target", backends[1],
    "--scenario", "spread", "--transport", "mix", "--connections", String(N), "--channels", "100",
    "--workers", "2", "--source-addrs", "127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4",
    "--publications", String(RATE * SECONDS), "--rate", String(RATE), "--drain-seconds", "10",
    "--connect-timeout", "30", "--resume-on-drop", "--quiet", "--json-file", json,
  ],
  { maxBuffer: 1 << 24 },
);
let ltOut = "";
lt.stdout.on("data", (d) => (ltOut += d));
lt.stderr.on("data", (d) => (ltOut += d));
const ltDone = new Promise((resolve) => lt.on("exit", (code) => resolve(code)));

// Wait until the subscribers are connected, then drain instance 0.
for (;;) {
  const open = (await Promise.all(hs.map(openConnections))).reduce((a, b) => a + b, 0);
  if (open >= N * 0.99 || Date.now() - started > 60_000) break;
  await sleep(500);
}
await sleep(3000);
const drained = await openConnections(hs[0]);
const samples = []; // [ms since SIGTERM, connects at hs[1] + hs[2]]
const others = [hs[1], hs[2]];
const t0 = Date.now();
const stopping = hs[0].stop();
let sampling = true;
const sampler = (async () => {
  while (sampling) {
    const c = (await Promise.all(others.map(connects))).reduce((a, b) => a + b, 0);
    samples.push([Date.now() - t0, c]);
    await sleep(100);
  }
})();
await stopping;
await sleep(5000);
sampling = false;
await sampler;
const code = await ltDone;

// The most connections accepted in any 1-s window after the SIGTERM.
let peak = 0;
for (let i = 0; i < samples.length; i++)
  for (let j = i; j < samples.length && samples[j][0] - samples[i][0] <= 1000; j++)
    peak = Math.max(peak, samples[j][1] - samples[i][1]);
const bound = (drained / (DRAIN_MS / 1000)) * 1.5;
const result = JSON.parse(readFileSync(json, "utf8"));
const d = result.deliveries;
console.log(`rolling restart: ${N} connections over 3 instances behind 2 HAProxy, ${RATE} publications/s`);
console.log(`  drained instance held ${drained} connections; --shutdown-drain-window=${DRAIN_MS} ms`);
console.log(`  the other two accepted at most ${peak} connections in any 1 s after the SIGTERM (bound ${Math.round(bound)}/s)`);
console.log(`  deliveries: expected ${d.expected}, received ${d.received}, loss ${d.loss}, duplicates ${d.duplicates}, out of order ${d.out_of_order}, gap notices ${d.gap_notices}`);
console.log(`  herald-loadtest exit status ${code}`);
if (code !== 0) console.log(ltOut.split("\n").slice(-20).join("\n"));
for (const lb of lbs) await lb.stop();
for (const h of hs.slice(1)) await h.stop();
await redis.stop?.();
process.exit(peak <= bound && d.loss === 0 && d.duplicates === 0 ? 0 : 1);
