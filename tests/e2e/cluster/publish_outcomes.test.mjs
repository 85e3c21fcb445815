// Publish outcomes under Redis faults (issue 19; docs/protocol.md "Publish
// outcomes"): every answer of the publish path is one of stored (200),
// stored but not replicated (503), not stored (503 "did not store ...;
// retry", only where the script never ran) and unknown (503 "may have
// stored ...: retry with the same Idempotency-Key"), on /v1/publish and on
// Centrifugo's /api/publish and /api/broadcast, every 503 with Retry-After.
// Each case reads back what Redis holds afterwards (XLEN of the channel's
// stream, the offset in its meta hash) and checks the answer against it.
//
// One Redis master and its replica (the test's own redis-servers), one
// herald with --redis-wait-replicas=1 and --redis-command-timeout-ms=1000
// (WAIT waits up to 500 ms), connected to the master through a TCP proxy
// written here (node:net) that injects a fault at an exact point of one
// publish, chosen by its channel name in the command bytes:
// - "drop-before-reply": the script reached Redis (its reply came back),
//   the connection is cut before herald gets that reply;
// - "drop-at-wait": the script's reply is passed on, the connection is cut
//   when herald sends WAIT;
// - "hold": the script's reply and everything after it are held back, so
//   herald's command timeout ends the connection.
// Other cases: the replica frozen (SIGSTOP), so every WAIT times out while
// six publishes queue behind each other (a healthy master that answers is
// never dropped); WAIT refused by an ACL (an error reply); the master made a
// read-only replica (READONLY).

import assert from "node:assert/strict";
import net from "node:net";
import { before, describe, test } from "node:test";

import { apiRaw } from "../lib/centrifuge.mjs";
import { publish } from "../lib/herald.mjs";
import { cleanupStack } from "../lib/processes.mjs";
import { freePort, redisCli, startClusterHerald, startRedis, tempDir, waitReady, waitReplicasInSync, waitUntil } from "./lib.mjs";

const started = cleanupStack(); // herald, proxy, redis-servers: stopped after the file

/**
 * A TCP proxy on 127.0.0.1 to `targetPort` that forwards both ways and
 * carries out armed faults (see the file comment). `arm(marker, mode)`
 * applies to the first client->server chunk that contains `marker`.
 */
async function startFaultProxy(targetPort) {
  const rules = [];
  const sockets = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: "127.0.0.1", port: targetPort });
    sockets.add(client);
    sockets.add(upstream);
    let rule = null; // the fault this connection is carrying out
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("data", (chunk) => {
      const text = chunk.toString("latin1");
      if (rule?.mode === "drop-at-wait" && rule.stage === "replied" && text.includes("WAIT")) {
        rule.stage = "done";
        cut(); // WAIT written by herald, never reaches Redis
        return;
      }
      if (rule === null) {
        const r = rules.find((x) => !x.taken && text.includes(x.marker));
        if (r) {
          r.taken = true;
          r.stage = "sent";
          rule = r;
        }
      }
      upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (rule?.stage === "holding") return; // nothing reaches herald any more
      // The publish script's reply: {epoch, offset}.
      if (rule?.stage === "sent" && /\*[23]\r\n/.test(chunk.toString("latin1"))) {
        if (rule.mode === "drop-before-reply") {
          rule.stage = "done";
          cut();
          return;
        }
        if (rule.mode === "hold") {
          rule.stage = "holding";
          return;
        }
        rule.stage = "replied"; // drop-at-wait: pass the reply on
      }
      client.write(chunk);
    });
    for (const s of [client, upstream]) {
      s.on("error", () => {});
      s.on("close", () => {
        sockets.delete(s);
        cut();
      });
    }
  });
  const port = await freePort();
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    arm(marker, mode) {
      const r = { marker, mode, taken: false, stage: "armed" };
      rules.push(r);
      return r;
    },
    stop: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** What Redis holds for `channel`: stream length and meta offset. */
async function held(port, channel) {
  const [xlen] = await redisCli(port, "XLEN", `herald:{${channel}}:history`);
  const offset = await redisCli(port, "HGET", `herald:{${channel}}:meta`, "offset");
  return { xlen: Number(xlen), offset: offset.length === 0 ? 0 : Number(offset[0]) };
}


/** Asserts a 503 `unavailable` whose message matches `re`, with Retry-After. */
function assert503(r, re) {
  assert.equal(r.status, 503, r.text);
  assert.equal(r.headers.get("retry-after"), "1", r.text);
  const err = r.json.error;
  if (typeof err.code === "number") assert.equal(err.code, 108, r.text); // Centrifugo: not available
  else assert.equal(err.code, "unavailable", r.text);
  assert.match(err.message, re, r.text);
}

const STORED_NOT_REPLICATED = /^Redis stored the publication, but /;
const UNKNOWN = /^Redis may have stored the publication \(.*\): retry with the same Idempotency-Key; without one a retry may store it twice$/;
const NOT_STORED = /^Redis did not store the publication \(.*\); retry$/;

/** Publishes again with the same key until the answer is 200; returns it. */
async function retryUntilStored(url, body, key) {
  let last;
  await waitUntil(
    async () => {
      last = await publish(url, body, { headers: { "Idempotency-Key": key } });
      return last.status === 200;
    },
    { timeoutMs: 5000, intervalMs: 100, what: `a 200 for the retry with key ${key}` },
  ).catch((err) => {
    throw new Error(`${err.message}; last ${last?.status} ${last?.text}`);
  });
  return last;
}

/** Redis's ids of herald's command connections (CLIENT LIST, name herald-cmd-N), sorted. */
async function commandClients(port) {
  const lines = await redisCli(port, "CLIENT", "LIST");
  return lines
    .filter((l) => /\bname=herald-cmd-\d+\b/.test(l))
    .map((l) => /\bid=(\d+)/.exec(l)[1])
    .sort();
}

/**
 * Arms `fault` (a mode of startFaultProxy's arm()) for `channel` on `proxy`, runs `send()`
 * and asserts the fault was injected: the rule reached `stage`.
 * @param {{arm: Function}} proxy
 * @param {string} channel
 * @param {string} fault "drop-before-reply", "drop-at-wait" or "hold"
 * @param {() => Promise<T>} send the request that meets the fault
 * @param {string} stage the rule's stage once injected ("done", or "holding" for "hold")
 * @returns {Promise<T>} what `send` returned
 * @template T
 */
async function withFault(proxy, channel, fault, send, stage = "done") {
  const rule = proxy.arm(channel, fault);
  const r = await send();
  assert.equal(rule.stage, stage, "the fault was injected");
  return r;
}

/** Waits until herald is ready and both its command connections are in Redis's CLIENT LIST. */
async function settle(fx) {
  await waitReady(fx.h.url, 15_000);
  await waitUntil(async () => (await commandClients(fx.master.port)).length === 2, { what: "two command connections" });
}

describe("publish outcomes under Redis faults (a master, its replica, --redis-wait-replicas=1)", () => {
  const fx = {};
  before(async () => {
    // Each in a directory of its own: the replica's full sync writes dump.rdb
    // into its working directory, which a later server there would load.
    fx.master = await startRedis({ cwd: tempDir("herald-outcomes-master-"), extra: ["--repl-diskless-sync-delay", "0"] });
    started.push(fx.master);
    fx.replica = await startRedis({
      cwd: tempDir("herald-outcomes-replica-"),
      extra: ["--replicaof", "127.0.0.1", String(fx.master.port)],
    });
    started.push(fx.replica);
    // A frozen replica ignores SIGTERM: thaw it before its stop.
    started.push(() => fx.replica.signal("SIGCONT"));
    // In sync, not only connected: the first full sync starts after the
    // master's repl-diskless-sync-delay (5 s by default, 0 here), and herald
    // with --redis-wait-replicas=1 is ready only once it is done.
    await waitReplicasInSync(fx.master.port, 1);
    fx.proxy = await startFaultProxy(fx.master.port);
    started.push(fx.proxy);
    fx.h = await startClusterHerald(fx.proxy.url, {
      args: ["--redis-wait-replicas=1", "--redis-command-timeout-ms=1000"],
    });
    started.push(fx.h);
    await waitReady(fx.h.url, 15_000);
  }, { timeout: 30_000 });

  test("WAIT times out (replica frozen): six publishes at once all say stored, Redis holds six, the master is never dropped", { timeout: 30_000 }, async () => {
    await settle(fx);
    const { h, master, replica } = fx;
    const CH = "stream:o-wait";
    const clients = await commandClients(master.port);
    assert.equal(clients.length, 2, "two command connections");
    replica.signal("SIGSTOP");
    let answers;
    try {
      // Two command connections: three publishes each, whose WAITs (500 ms
      // each) run one after the other, 1.5 s for the last.
      answers = await Promise.all(
        Array.from({ length: 6 }, (_, i) => publish(h.url, { channel: CH, event: "e", data: { i } })),
      );
    } finally {
      replica.signal("SIGCONT");
    }
    for (const r of answers) {
      if (r.status === 200) continue; // confirmed before the freeze took hold
      assert503(r, STORED_NOT_REPLICATED);
      assert.match(r.json.error.message, /replicas confirmed the write/, r.text);
    }
    assert.deepEqual(await held(master.port, CH), { xlen: 6, offset: 6 });
    // The same two connections: none was dropped for a late reply.
    assert.deepEqual(await commandClients(master.port), clients);
    // Replicated again: acknowledged.
    await waitUntil(async () => (await publish(h.url, { channel: CH, event: "e", data: "after" })).status === 200, {
      timeoutMs: 5000,
      intervalMs: 100,
      what: "a 200 once the replica is back",
    });
  });

  test("WAIT answers an error (NOPERM): /api/broadcast says stored, not replicated; Redis holds both", { timeout: 20_000 }, async () => {
    await settle(fx);
    const { h, master } = fx;
    const A = "stream:o-werr-a";
    const B = "stream:o-werr-b";
    assert.deepEqual(await redisCli(master.port, "ACL", "SETUSER", "default", "-wait"), ["OK"]);
    let r;
    try {
      r = await apiRaw(h.url, "broadcast", { channels: [A, B], data: { x: 1 }, tags: { event: "e" } });
    } finally {
      assert.deepEqual(await redisCli(master.port, "ACL", "SETUSER", "default", "+wait"), ["OK"]);
    }
    assert503(r, STORED_NOT_REPLICATED);
    assert.match(r.json.error.message, /WAIT failed \(NOPERM/, r.text);
    assert.deepEqual(await held(master.port, A), { xlen: 1, offset: 1 });
    assert.deepEqual(await held(master.port, B), { xlen: 1, offset: 1 });
  });

  test("connection dropped after the script was sent, before its reply: unknown; stored; the same key gets the same offset", { timeout: 20_000 }, async () => {
    await settle(fx);
    const { h, master, proxy } = fx;
    const CH = "stream:o-drop-reply";
    const body = { channel: CH, event: "e", data: { n: 1 } };
    const r = await withFault(proxy, CH, "drop-before-reply", () =>
      publish(h.url, body, { headers: { "Idempotency-Key": "k-drop-1" } }));
    assert503(r, UNKNOWN);
    assert.deepEqual(await held(master.port, CH), { xlen: 1, offset: 1 }); // Redis did store it
    const again = await retryUntilStored(h.url, body, "k-drop-1");
    assert.deepEqual(again.json.offsets, { [CH]: 1 });
    assert.deepEqual(await held(master.port, CH), { xlen: 1, offset: 1 }); // not twice

    // The same on /api/publish, in Centrifugo's error shape.
    const API = "stream:o-drop-api";
    const a = await withFault(proxy, API, "drop-before-reply", () =>
      apiRaw(h.url, "publish", { channel: API, data: { n: 2 }, idempotency_key: "k-drop-2" }));
    assert503(a, UNKNOWN);
    assert.deepEqual(await held(master.port, API), { xlen: 1, offset: 1 });
  });

  test("connection dropped after the script's reply, before WAIT's: stored, not replicated", { timeout: 20_000 }, async () => {
    await settle(fx);
    const { h, master, proxy } = fx;
    const CH = "stream:o-drop-wait";
    const r = await withFault(proxy, CH, "drop-at-wait", () => publish(h.url, { channel: CH, event: "e", data: 1 }));
    assert503(r, STORED_NOT_REPLICATED);
    assert.match(r.json.error.message, /WAIT got no reply/, r.text);
    assert.deepEqual(await held(master.port, CH), { xlen: 1, offset: 1 });
  });

  test("command timeout (the script's reply held back): unknown; stored", { timeout: 20_000 }, async () => {
    await settle(fx);
    const { h, master, proxy } = fx;
    const CH = "stream:o-hold";
    const clients = await commandClients(master.port);
    const rule = proxy.arm(CH, "hold");
    const t0 = Date.now();
    const r = await publish(h.url, { channel: CH, event: "e", data: 1 });
    const took = Date.now() - t0;
    assert.equal(rule.stage, "holding", "the fault was injected");
    assert503(r, UNKNOWN);
    assert.ok(took >= 900, `answered after ${took} ms: by the command timeout`);
    // Herald dropped the connection whose reply was late, and only it.
    await waitUntil(async () => (await commandClients(master.port)).filter((id) => clients.includes(id)).length === 1, {
      what: "one command connection replaced",
    });
    assert.deepEqual(await held(master.port, CH), { xlen: 1, offset: 1 });
  });

  test("READONLY (the master made a replica under herald): not stored, Redis unchanged", { timeout: 20_000 }, async () => {
    await settle(fx);
    const { h, master } = fx;
    const CH = "stream:o-readonly";
    await retryUntilStored(h.url, { channel: CH, event: "e", data: 1 }, "k-ro-1");
    // A master that does not exist: the node turns read-only and keeps its data.
    const nowhere = await freePort();
    assert.deepEqual(await redisCli(master.port, "REPLICAOF", "127.0.0.1", String(nowhere)), ["OK"]);
    try {
      const r = await publish(h.url, { channel: CH, event: "e", data: 2 });
      assert503(r, NOT_STORED);
      assert.match(r.json.error.message, /READONLY/, r.text);
      const a = await apiRaw(h.url, "publish", { channel: CH, data: 3 });
      assert503(a, NOT_STORED);
      assert.deepEqual(await held(master.port, CH), { xlen: 1, offset: 1 });
    } finally {
      await redisCli(master.port, "REPLICAOF", "NO", "ONE");
    }
  });
});
