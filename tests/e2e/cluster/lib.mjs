// Helpers for the cluster end-to-end tests: a private redis-server per test
// file, herald instances in cluster mode, HAProxy with docker/haproxy.cfg,
// SSE/WebSocket subscribers whose readiness is proven without publishing on
// the channels under test, and normalisation of what they received.
//
// Every process started here is registered in ../lib/processes.mjs (the
// registry the single-instance helpers use too), which stops whatever is
// left by PID when the test process exits; herald instances are started
// with ../lib/herald.mjs's startHerald.

import { execFile } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before } from "node:test";
import { fileURLToPath } from "node:url";

import { crc16Xmodem, encodeAccountId } from "../../../demo/strkey.mjs";
import {
  channelHash,
  channelOfEvent,
  cursorPosition,
  getJson,
  parseCursor,
  probeUntilDelivered,
  sleep,
  sseCurl,
  startHerald,
  waitUntil,
} from "../lib/herald.mjs";
import { collectOutput, freePort, isAlive as alive, killAndWait, register, spawnProcess, tempDir } from "../lib/processes.mjs";
import { wsConnect, wsSubscribe } from "../lib/ws.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(here, "..", "..", "..");
export const HAPROXY_CFG = path.join(REPO, "docker", "haproxy.cfg");
export const REDIS_SERVER = process.env.REDIS_SERVER || "redis-server";
export const REDIS_CLI = process.env.REDIS_CLI || "redis-cli";
export const HAPROXY = process.env.HAPROXY || "haproxy";

// -------------------------------------------------------------------- redis

/** One inline command over a fresh TCP connection; resolves with the raw reply or rejects. */
export function redisRaw(port, line, { timeoutMs = 1000 } = {}) {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: "127.0.0.1", port });
    let out = "";
    const t = setTimeout(() => {
      s.destroy();
      reject(new Error("redis timeout"));
    }, timeoutMs);
    s.setEncoding("utf8");
    s.on("connect", () => s.write(`${line}\r\n`));
    s.on("data", (d) => {
      out += d;
      if (out.includes("\r\n")) {
        clearTimeout(t);
        s.destroy();
        resolve(out);
      }
    });
    s.on("error", (err) => {
      clearTimeout(t);
      reject(err);
    });
  });
}

/**
 * Starts redis-server on 127.0.0.1 (`port`, or a free one) without
 * persistence, or with an fsync-always AOF in `dir` when `persist` is given,
 * or (`rdbDir`) loading dump.rdb from that directory, written only by SAVE.
 * @returns {Promise<{port:number, pid:number, url:string, log:()=>string,
 *   alive:()=>boolean, kill:(signal?:string)=>Promise<void>, stop:()=>Promise<void>}>}
 */
export async function startRedis({ port, persist = null, rdbDir = null, timeoutMs = 5000, extra = [], cwd = null, retries = port === undefined ? 4 : 0 } = {}) {
  const given = { persist, rdbDir, timeoutMs, extra, cwd };
  port ??= await freePort();
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", ""];
  if (persist) args.push("--appendonly", "yes", "--appendfsync", "always", "--dir", persist);
  else args.push("--appendonly", "no");
  // rdbDir: snapshots only when asked (SAVE), loaded from there at start.
  if (rdbDir) {
    args.push("--dir", rdbDir);
    persist = rdbDir;
  }
  args.push("--daemonize", "no", ...extra);
  const child = spawnProcess(REDIS_SERVER, args, { stdio: ["ignore", "pipe", "pipe"], cwd: cwd || persist || os.tmpdir() }, "redis-server");
  const log = collectOutput(child);
  try {
    await waitUntil(
      async () => {
        if (!alive(child)) throw new Error(`redis-server exited (${child.exitCode}/${child.signalCode}):\n${log()}`);
        try {
          return (await redisRaw(port, "PING", { timeoutMs: 300 })).startsWith("+PONG");
        } catch {
          return false;
        }
      },
      { timeoutMs, intervalMs: 25, what: `redis-server on port ${port}` },
    );
  } catch (err) {
    await killAndWait(child, "SIGKILL");
    // A port chosen here was free a moment ago, then taken (another process's
    // ephemeral port): choose again.
    if (retries > 0 && isAddressInUse(err)) return startRedis({ ...given, retries: retries - 1 });
    throw err;
  }
  return {
    port,
    pid: child.pid,
    url: `redis://127.0.0.1:${port}`,
    log,
    alive: () => alive(child),
    /** Signal by PID, wait for the exit. */
    kill: (signal = "SIGKILL") => killAndWait(child, signal),
    /** Send a signal by PID and return at once (SIGSTOP / SIGCONT: freeze and thaw). */
    signal: (signal) => alive(child) && child.kill(signal),
    stop: () => killAndWait(child, "SIGTERM"),
  };
}

/** True when `err` (from startRedis) says redis-server could not bind its port. */
function isAddressInUse(err) {
  return /Address already in use/.test(String(err?.message));
}

/**
 * Waits (up to `timeoutMs`) until the redis-server on `port` has its first
 * full sync done: a master with `replicas` replicas, each in state=online; a
 * replica with its link up and no sync in progress. A replica that has only
 * connected is not enough: the master starts the sync after its
 * repl-diskless-sync-delay (5 s by default), and WAIT is answered only after.
 */
export async function waitReplicasInSync(port, replicas, timeoutMs = 15_000) {
  await waitUntil(
    async () => {
      const info = await redisCli(port, "INFO", "replication");
      if (info.includes("role:master")) return info.includes(`connected_slaves:${replicas}`) && !info.some((l) => /^slave\d+:.*state=(?!online)/.test(l));
      return info.includes("master_link_status:up") && info.includes("master_sync_in_progress:0");
    },
    { timeoutMs, intervalMs: 50, what: `replication in sync on ${port}` },
  );
}

/**
 * Starts a Redis Cluster on loopback: `masters` masters with `replicas`
 * replicas each (redis-server --cluster-enabled yes, short
 * cluster-node-timeout, nodes.conf in a temporary directory), joined with
 * `redis-cli --cluster create ... --cluster-replicas N --cluster-yes`, and
 * waits until every node says cluster_state:ok. Each node's cluster bus
 * gets a free port of its own (`--cluster-port`, Redis 7), so no P+10000
 * port has to be free. Every process is stopped by PID (see `stop`).
 * @returns {Promise<{nodes:Array, url:string, seeds:string[], stop:()=>Promise<void>}>}
 */
export async function startRedisCluster({ masters = 3, replicas = 1, nodeTimeoutMs = 1000, extraArgs = [] } = {}) {
  const dir = tempDir("herald-redis-cluster-");
  const nodes = [];
  const stopAll = () => Promise.all(nodes.map((n) => n.kill("SIGKILL")));
  try {
    for (let i = 0; i < masters * (1 + replicas); i++) {
      let opts;
      let node;
      // The two ports were free a moment ago; when one was taken meanwhile
      // (another process's ephemeral port), choose both again.
      for (let attempt = 1; !node; attempt++) {
        const port = await freePort();
        const bus = await freePort();
        // Each node its own --dir: a replica's full sync writes dump.rdb even
        // with --save '', and a restarted node must not load another's.
        const nodeDir = path.join(dir, `node-${port}`);
        mkdirSync(nodeDir);
        opts = {
          port,
          extra: ["--dir", nodeDir, "--cluster-enabled", "yes", "--cluster-config-file", path.join(dir, `nodes-${port}.conf`),
            "--cluster-node-timeout", String(nodeTimeoutMs), "--cluster-port", String(bus),
            "--cluster-replica-validity-factor", "0", ...extraArgs],
          cwd: dir,
        };
        node = await startRedis(opts).catch((err) => {
          if (attempt < 5 && isAddressInUse(err)) return null;
          throw err;
        });
      }
      // Starts a stopped node again with its nodes.conf: it rejoins the cluster
      // (a failed master comes back as a replica of the one promoted meanwhile).
      node.restart = async () => {
        const again = await startRedis(opts);
        Object.assign(node, { pid: again.pid, alive: again.alive, kill: again.kill, signal: again.signal, stop: again.stop, log: again.log });
      };
      nodes.push(node);
    }
    await new Promise((resolve, reject) => {
      register(
        execFile(REDIS_CLI, ["--cluster", "create", ...nodes.map((n) => `127.0.0.1:${n.port}`),
          "--cluster-replicas", String(replicas), "--cluster-yes"], { timeout: 30_000 }, (err, stdout, stderr) => {
          if (err) reject(new Error(`redis-cli --cluster create: ${err.message}\n${stdout}\n${stderr}`));
          else resolve();
        }),
        "redis-cli",
      );
    });
    for (const n of nodes) {
      await waitUntil(async () => (await redisCli(n.port, "CLUSTER", "INFO")).includes("cluster_state:ok"), {
        timeoutMs: 15_000,
        what: `cluster_state:ok on ${n.port}`,
      });
    }
    // Replication running (the first full sync done), so that WAIT can be answered.
    for (const n of nodes) {
      await waitReplicasInSync(n.port, replicas);
    }
  } catch (err) {
    await stopAll();
    throw err;
  }
  const seeds = nodes.slice(0, 2).map((n) => `127.0.0.1:${n.port}`);
  return {
    nodes,
    seeds,
    url: `redis+cluster://${seeds.join(",")}`,
    stop: stopAll,
  };
}

/** The port of the master serving each slot (array of 16384), from CLUSTER NODES on `port`. */
export async function slotOwners(port) {
  const lines = await redisCli(port, "CLUSTER", "NODES");
  const owner = new Array(16384).fill(0);
  for (const line of lines) {
    const f = line.split(" ");
    if (!f[2].includes("master") || f[2].includes("fail")) continue;
    const p = Number(f[1].split("@")[0].split(":").pop());
    for (const r of f.slice(8)) {
      if (r.startsWith("[")) continue; // a slot being migrated
      const [a, b] = r.split("-").map(Number);
      for (let s = a; s <= (b ?? a); s++) owner[s] = p;
    }
  }
  return owner;
}

/**
 * The hash slot of a Herald channel's keys: CRC16 (XMODEM, the Stellar
 * StrKey checksum too) of its hash tag, the channel name, modulo 16384
 * (Redis Cluster specification; net/redis/slot.hpp).
 */
export function channelSlot(channel) {
  return crc16Xmodem(Buffer.from(channel, "utf8")) % 16384;
}

/** The node id of the Redis Cluster node on `port` (CLUSTER MYID). */
export async function nodeId(port) {
  return (await redisCli(port, "CLUSTER", "MYID"))[0];
}

/** Runs redis-cli against `port`; resolves with trimmed stdout lines. */
export function redisCli(port, ...args) {
  return new Promise((resolve, reject) => {
    register(
      execFile(REDIS_CLI, ["-h", "127.0.0.1", "-p", String(port), ...args], { timeout: 5000 }, (err, stdout, stderr) => {
        if (err) reject(new Error(`redis-cli ${args.join(" ")}: ${err.message} ${stderr}`));
        else resolve(stdout.split("\n").map((l) => l.trim()).filter((l) => l !== ""));
      }),
      "redis-cli",
    );
  });
}

/** Subscriber count of a pub/sub channel (PUBSUB NUMSUB). */
export async function numsub(port, pubsubChannel) {
  const lines = await redisCli(port, "PUBSUB", "NUMSUB", pubsubChannel);
  // redis-cli prints "name" then "count"
  return Number(lines[1]);
}

// ------------------------------------------------------------------- herald

/**
 * Starts one herald in cluster mode with startHerald (../lib/herald.mjs):
 * `via: "env"` passes REDIS_URL in its environment, `via: "flag"` passes
 * --redis-url; `args` are more options.
 */
export async function startClusterHerald(redisUrl, { via = "env", args = [] } = {}) {
  if (via === "flag") return startHerald([`--redis-url=${redisUrl}`, ...args]);
  return startHerald(args, { env: { REDIS_URL: redisUrl } });
}

/**
 * A private redis-server (startRedis(redisOpts): port, rdbDir, ...) and one
 * herald on it (startClusterHerald), waited for until ready (waitReady);
 * both pushed onto `stops`, a cleanupStack() (../lib/processes.mjs), so
 * they are stopped after the file, herald first.
 * @param {Array} stops the file's cleanupStack()
 * @param {object} redisOpts startRedis options
 * @returns {Promise<{redis: object, h: object}>} the two handles
 * @throws when either does not start, or herald is not ready within 5 s
 */
export async function startRedisAndHerald(stops, redisOpts = {}) {
  const redis = await startRedis(redisOpts);
  stops.push(redis);
  const h = await startClusterHerald(redis.url);
  stops.push(h);
  await waitReady(h.url);
  return { redis, h };
}

/** Starts `n` instances on one Redis and waits until each answers /readyz 200. */
export async function startCluster(redisUrl, n = 3, opts = {}) {
  const hs = [];
  try {
    for (let i = 0; i < n; i++) hs.push(await startClusterHerald(redisUrl, opts));
    for (const h of hs) await waitReady(h.url);
  } catch (err) {
    await Promise.all(hs.map((h) => h.stop()));
    throw err;
  }
  return hs;
}

/**
 * The cluster of a `describe` block: a `before` hook starts a private
 * redis-server, `n` herald instances on it (startCluster: `via`, `args`) and,
 * with `haproxy: true`, HAProxy in front of them; an `after` hook runs
 * `beforeStop()` (close the suite's clients), stops HAProxy and the
 * instances (stop(): the sanitizer check) and SIGKILLs Redis. Returns
 * `{redis, hs, lb}`, filled in by the `before` hook: `hs` is the array of
 * herald handles, `redis` and `lb` take the startRedis / startHaproxy
 * handles' fields.
 * @returns {{redis: object, hs: object[], lb: object}}
 */
export function suiteCluster(n = 3, { via = "env", args = [], haproxy = false, beforeStop = null } = {}) {
  const fx = { redis: {}, hs: [], lb: {} };
  let redis = null;
  let lb = null;
  before(async () => {
    redis = await startRedis();
    Object.assign(fx.redis, redis);
    fx.hs.push(...(await startCluster(redis.url, n, { via, args })));
    if (haproxy) {
      lb = await startHaproxy(fx.hs.map((h) => `127.0.0.1:${h.port}`));
      Object.assign(fx.lb, lb);
    }
  }, { timeout: 45_000 });
  after(async () => {
    try {
      if (beforeStop) await beforeStop();
    } finally {
      await lb?.stop();
      await Promise.all(fx.hs.map((h) => h.stop()));
      await redis?.kill("SIGKILL");
    }
  }, { timeout: 20_000 });
  return fx;
}

/**
 * The `after` hook (20 s at most) of a describe block on a Redis Cluster:
 * closes the block's clients (entries `{client}` whose client has close();
 * a failing close is ignored, it may be closed already), then stops its
 * herald instances and the cluster (startRedisCluster's handle).
 * @param {() => {clients: Array<{client: {close: () => Promise<void>}}>, hs: object[], cluster?: object}} what
 *   called in the hook: the block's `before` hook fills them in
 */
export function afterRedisCluster(what) {
  after(async () => {
    const { clients, hs, cluster } = what();
    await Promise.all(clients.map(({ client }) => client.close().catch(() => {})));
    await Promise.all(hs.map((h) => h.stop()));
    await cluster?.stop();
  }, { timeout: 20_000 });
}

/** GET /readyz of `url`; a failed request is `{status: 0}`. */
export async function readyz(url) {
  try {
    return await getJson(url, "/readyz");
  } catch (err) {
    return { status: 0, text: String(err), json: undefined };
  }
}

/** Waits until `url`/readyz answers 200. */
export async function waitReady(url, timeoutMs = 5000) {
  await waitUntil(async () => (await readyz(url)).status === 200, { timeoutMs, what: `${url}/readyz 200` });
}

/** SIGKILL by PID and wait (the herald handle's kill()); stop() still makes the sanitizer check. */
export async function killHerald(h) {
  await h.kill("SIGKILL");
}

// -------------------------------------------------------------------- haproxy

function fdHardLimit() {
  try {
    const m = /Max open files\s+\d+\s+(\d+)/.exec(readFileSync("/proc/self/limits", "utf8"));
    return m ? Number(m[1]) : Infinity;
  } catch {
    return Infinity;
  }
}

/**
 * Starts `haproxy -f docker/haproxy.cfg -db` with LISTEN and HERALD_1..3 in
 * its environment and waits until it answers `GET /healthz`.
 *
 * docker/haproxy.cfg sets `maxconn 9000`, for which HAProxy wants about
 * 18,000 file descriptors; where the hard limit is lower it refuses to start
 * ("Cannot raise FD limit"). Then, and only then, a small file with
 * `global maxconn <fit>` is loaded first (the first maxconn wins; HAProxy
 * warns "already specified" for the second) and `overridden` says so.
 */
export async function startHaproxy(backends, { timeoutMs = 10_000 } = {}) {
  const port = await freePort();
  const env = { ...process.env, LISTEN: `127.0.0.1:${port}` };
  backends.forEach((b, i) => (env[`HERALD_${i + 1}`] = b));
  const attempt = async (files) => {
    const args = files.flatMap((f) => ["-f", f]).concat(["-db"]);
    const child = spawnProcess(HAPROXY, args, { env, stdio: ["ignore", "pipe", "pipe"] }, "haproxy");
    const exited = once(child, "exit").catch(() => {});
    const log = collectOutput(child);
    const url = `http://127.0.0.1:${port}`;
    try {
      await waitUntil(
        async () => {
          if (!alive(child)) return "exited";
          try {
            const r = await getJson(url, "/healthz", { signal: AbortSignal.timeout(500) });
            return r.status === 200 ? "up" : false;
          } catch {
            return false;
          }
        },
        { timeoutMs, intervalMs: 50, what: `haproxy on ${port}` },
      );
    } catch (err) {
      await killAndWait(child, "SIGKILL");
      throw new Error(`${err.message}\n${log()}`);
    }
    if (!alive(child)) {
      await exited;
      return { ok: false, log: log() };
    }
    return {
      ok: true,
      port,
      url,
      pid: child.pid,
      log,
      alive: () => alive(child),
      stop: () => killAndWait(child, "SIGTERM"),
    };
  };
  const first = await attempt([HAPROXY_CFG]);
  if (first.ok) return { ...first, overridden: null };
  if (!/Cannot raise FD limit/.test(first.log)) throw new Error(`haproxy did not start:\n${first.log}`);
  const fit = Math.max(1000, Math.floor((fdHardLimit() - 200) / 2));
  const dir = tempDir("herald-haproxy-");
  const override = path.join(dir, "maxconn.cfg");
  writeFileSync(override, `global\n    maxconn ${fit}\n`);
  const second = await attempt([override, HAPROXY_CFG]);
  if (!second.ok) throw new Error(`haproxy did not start even with maxconn ${fit}:\n${second.log}`);
  return { ...second, overridden: `maxconn ${fit} (docker/haproxy.cfg: ${first.log.trim().split("\n").at(-1)})` };
}

// ---------------------------------------------------------------- subscribers

let probeSeq = 0;
/** A channel name unique to this process, for readiness probes. */
export function probeChannel(tag = "p") {
  return `stream:probe-${tag}-${process.pid}-${++probeSeq}`;
}

/** A valid `user:` channel (Stellar account id from a seed byte). */
export function userChannel(seed) {
  return `user:${encodeAccountId(Uint8Array.from({ length: 32 }, (_, i) => (i * 31 + seed * 7 + 3) & 0xff))}`;
}

/**
 * Opens an SSE subscription (curl) to `channels` plus a private probe
 * channel, and publishes on the probe channel only until a probe arrives.
 * Herald holds every event of an SSE connection until all its initial
 * subscriptions are answered, so a delivered probe proves every channel of
 * the connection is subscribed, without publishing on the channels under
 * test. `sub.mark` is the number of events received by then.
 */
export async function sseSubscribe(baseUrl, channels, { headers = {}, probe = probeChannel("sse"), timeoutMs = 8000 } = {}) {
  const all = [...channels, probe];
  const qs = all.map((c) => `channel=${encodeURIComponent(c)}`).join("&");
  const sub = sseCurl(`${baseUrl}/v1/sse?${qs}`, headers);
  try {
    const status = await sub.status;
    if (status !== 200) throw new Error(`SSE subscribe got ${status}: ${sub.raw()}`);
    await probeUntilDelivered(baseUrl, sub.events, [probe], {
      timeoutMs,
      isProbe: (e, tag) => e.event === "probe" && e.data === JSON.stringify({ probe: tag }),
    });
    sub.mark = sub.events.items.length;
    sub.channels = all;
    sub.probe = probe;
    return sub;
  } catch (err) {
    await sub.close();
    throw err;
  }
}

/** WebSocket client subscribed to `channels` (every `subscribed` reply awaited). */
export async function wsSubscribeAll(baseUrl, channels) {
  const c = await wsConnect(baseUrl);
  c.subscribed = {};
  for (const ch of channels) {
    const r = await wsSubscribe(c, ch);
    if (r.op !== "subscribed") {
      await c.close();
      throw new Error(`subscribe ${ch}: ${JSON.stringify(r)}`);
    }
    c.subscribed[ch] = r;
  }
  return c;
}

// ------------------------------------------------------------ normalisation

/**
 * What an SSE client received on `channel`, in arrival order:
 * {kind:"pub", offset, epoch, event, data, id} or {kind:"gap", reason, data}.
 * The channel of a publication event is the cursor entry that changed since
 * the previous event (or `startId`); the first event of a fresh connection
 * (no previous id) is attributed to no channel, so let it be a probe.
 */
export function sseItems(events, channel, allChannels, { startId } = {}) {
  const out = [];
  let prev = startId; // the Last-Event-ID the connection resumed from, if any
  for (const e of events) {
    if (e.event === "herald.gap") {
      let d;
      try {
        d = JSON.parse(e.data);
      } catch {
        d = { raw: e.data };
      }
      if (d.channel === channel || d.channel === undefined) out.push({ kind: "gap", reason: d.reason, data: d, id: e.id });
    } else if (e.id) {
      const ch = prev ? channelOfEvent(prev, e.id, allChannels) : undefined;
      const pos = cursorPosition(e.id, channel);
      if (ch === channel) {
        let data;
        try {
          data = JSON.parse(e.data);
        } catch {
          data = e.data;
        }
        out.push({ kind: "pub", offset: pos.offset, epoch: pos.epoch, event: e.event, data, id: e.id });
      }
    }
    if (e.id) prev = e.id;
  }
  return out;
}

/** What a WebSocket client received on `channel`: same shape as sseItems (no epoch on publications). */
export function wsItems(messages, channel) {
  const out = [];
  for (const m of messages) {
    if (m.channel !== channel) continue;
    if (m.op === "publication") out.push({ kind: "pub", offset: m.offset, event: m.event, data: m.data });
    else if (m.op === "gap") out.push({ kind: "gap", reason: m.reason, data: m });
  }
  return out;
}

export { channelHash, freePort, getJson, parseCursor, sleep, tempDir, waitUntil };
