// Live resharding with redis-cli on a real Redis Cluster (issue #11): 3
// masters (redis-server --cluster-enabled yes, started here on loopback ports
// and stopped by PID), two herald instances given the cluster in
// --redis-url=redis+cluster://..., SSE and WebSocket subscribers on both, on
// channels spread over every master, three of them in the slots the reshard
// moves. Under steady publishing, `redis-cli --cluster reshard --cluster-from
// <id> --cluster-to <id> --cluster-slots N --cluster-yes` moves those slots,
// keys and all, to another master: every subscriber gets every acknowledged
// publication once, in order, with contiguous offsets and no gap notice, and
// keeps receiving the moved channels from their new master. Also /readyz's
// node list (the figures /healthz and /metrics have) before and after the
// move, and in its 503 answer when a master is lost. See docs/cluster.md.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { before, describe, test } from "node:test";

import { getJson, publish } from "../lib/herald.mjs";
import { register } from "../lib/processes.mjs";
import {
  afterRedisCluster,
  channelSlot,
  nodeId,
  readyz,
  REDIS_CLI,
  redisCli,
  sleep,
  slotOwners,
  sseItems,
  sseSubscribe,
  startCluster,
  startRedisCluster,
  waitUntil,
  wsItems,
  wsSubscribeAll,
} from "./lib.mjs";

const MOVE_SLOTS = 300; // the reshard's --cluster-slots: the source's lowest 300 slots
const RESHARD_TIMEOUT_MS = 60_000;

/** `redis-cli --cluster reshard ...` against `port`; resolves with its output, rejects on failure or timeout (then killed by PID). */
function reshard(port, fromId, toId, slots) {
  return new Promise((resolve, reject) => {
    register(
      execFile(REDIS_CLI, ["--cluster", "reshard", `127.0.0.1:${port}`, "--cluster-from", fromId, "--cluster-to", toId,
        "--cluster-slots", String(slots), "--cluster-yes"], { timeout: RESHARD_TIMEOUT_MS, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
        if (err) reject(new Error(`redis-cli --cluster reshard: ${err.message}\n${stdout.slice(-2000)}\n${stderr}`));
        else resolve(stdout);
      }),
      "redis-cli",
    );
  });
}

/** /readyz's and /healthz's node lists, reduced to what must agree between them. */
const nodeFigures = (list) =>
  (list ?? []).map(({ node, role, connected, slots }) => ({ node, role, connected, slots })).sort((a, b) => a.node.localeCompare(b.node));

describe("redis-cli --cluster reshard under publishing, two instances on a 3-master Redis Cluster", { timeout: 170_000 }, () => {
  let cluster;
  let hs = [];
  const clients = [];
  let source; // the master that gives slots away
  let target; // the master that takes them
  let third; // the master the reshard leaves alone
  let moving; // the slots the reshard moves
  const channels = []; // every channel under test
  const moved = []; // the channels in the moving slots
  let owners;

  before(async () => {
    cluster = await startRedisCluster({ masters: 3, replicas: 0 });
    hs = await startCluster(cluster.url, 2, { via: "flag" });
    owners = await slotOwners(cluster.nodes[0].port);
    const masters = [...new Set(owners)].sort((a, b) => owners.indexOf(a) - owners.indexOf(b));
    assert.equal(masters.length, 3, `three masters: ${masters}`);
    [source, target, third] = masters.map((p) => cluster.nodes.find((n) => n.port === p));
    // redis-cli gives away a source's slots lowest first: those are the ones that move.
    const sourceSlots = owners.flatMap((p, s) => (p === source.port ? [s] : []));
    moving = new Set(sourceSlots.slice(0, MOVE_SLOTS));
    // Three channels in the moving slots, and one on each master outside them.
    const want = { moving: 3, [source.port]: 1, [target.port]: 1, [third.port]: 1 };
    for (let i = 0; Object.values(want).some((n) => n > 0) && i < 1_000_000; i++) {
      const ch = `stream:rs${i}`;
      const slot = channelSlot(ch);
      const key = moving.has(slot) ? "moving" : owners[slot];
      if (!(want[key] > 0)) continue;
      want[key]--;
      channels.push(ch);
      if (key === "moving") moved.push(ch);
    }
    assert.equal(channels.length, 6, JSON.stringify(want));
    // The slot computation agrees with Redis's own.
    for (const ch of channels) assert.equal(Number((await redisCli(source.port, "CLUSTER", "KEYSLOT", ch))[0]), channelSlot(ch), ch);
  }, { timeout: 60_000 });

  afterRedisCluster(() => ({ clients, hs, cluster }));

  const slotsOf = (port) => owners.filter((p) => p === port).length;

  test("/readyz lists every master: address, role, connected, slots owned, as /healthz does", async () => {
    for (const h of hs) {
      const r = await readyz(h.url);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.status, "ready");
      const nodes = r.json.redis_nodes;
      assert.ok(Array.isArray(nodes), r.text);
      for (const m of [source, target, third]) {
        const row = nodes.find((n) => n.node === `127.0.0.1:${m.port}`);
        assert.ok(row, `${m.port} listed: ${r.text}`);
        assert.deepEqual({ role: row.role, connected: row.connected, slots: row.slots }, { role: "master", connected: true, slots: slotsOf(m.port) });
        assert.equal(typeof row.subscriptions, "number");
        assert.equal(typeof row.reconnects, "number");
      }
      assert.equal(nodes.reduce((n, x) => n + x.slots, 0), 16384);
      const health = await getJson(h.url, "/healthz");
      assert.deepEqual(nodeFigures(health.json.redis_nodes), nodeFigures(nodes), "the same figures as /healthz");
    }
  });

  const view = (c, ch) => (c.kind === "sse" ? sseItems(c.client.events.items.slice(c.from), ch, c.client.channels, { startId: c.startId }) : wsItems(c.client.inbox.items.slice(c.from), ch));

  test("the reshard moves live channels, keys and all: every acknowledged publication once, in order, and they keep following", async () => {
    for (const [i, h] of hs.entries()) {
      clients.push({ name: `sse@${i}`, kind: "sse", client: await sseSubscribe(h.url, channels) });
      clients.push({ name: `ws@${i}`, kind: "ws", client: await wsSubscribeAll(h.url, channels) });
    }
    for (const c of clients) {
      c.from = c.kind === "sse" ? c.client.events.items.length : c.client.inbox.items.length;
      if (c.kind === "sse") c.startId = c.client.events.items.filter((e) => e.id).at(-1)?.id;
    }
    const acked = Object.fromEntries(channels.map((c) => [c, []])); // seqs answered 200, in answer order
    const refused = []; // seqs answered 503
    const unexpected = []; // answers other than 200 and 503
    let seq = 0;
    let stop = false;
    let reshardDone = false;
    const ackedAfter = Object.fromEntries(moved.map((c) => [c, 0]));
    // One publisher per channel, so that answer order is publishing order on
    // each channel; the instances take turns.
    const loops = channels.map((ch, k) =>
      (async () => {
        for (let i = k; !stop; i++) {
          const s = ++seq;
          const r = await publish(hs[i % hs.length].url, { channel: ch, event: "tick", data: { seq: s } }).catch((e) => ({ status: 0, text: String(e) }));
          if (r.status === 200) {
            acked[ch].push(s);
            if (reshardDone && ch in ackedAfter) ackedAfter[ch]++;
          } else if (r.status === 503) refused.push({ s, text: r.text });
          else unexpected.push(`${r.status} ${r.text}`);
          await sleep(10);
        }
      })(),
    );
    const slotsBefore = { source: slotsOf(source.port), target: slotsOf(target.port) };
    const ownerBefore = Object.fromEntries(channels.map((c) => [c, owners[channelSlot(c)]]));
    let reshardMs;
    try {
      await waitUntil(() => channels.every((c) => acked[c].length >= 2), { what: "publishing under way on every channel" });
      const t0 = Date.now();
      await reshard(target.port, await nodeId(source.port), await nodeId(target.port), MOVE_SLOTS);
      reshardMs = Date.now() - t0;
      reshardDone = true;
      await waitUntil(() => moved.every((c) => ackedAfter[c] >= 5), { timeoutMs: 15_000, intervalMs: 50, what: "publications on the moved channels after the reshard" });
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    const total = Object.values(acked).reduce((n, l) => n + l.length, 0);
    console.log(`reshard of ${MOVE_SLOTS} slots took ${reshardMs} ms; ${total} publications acknowledged, ${refused.length} answered 503`);
    assert.deepEqual(unexpected, [], "every publish is answered 200 or 503");

    // The moved channels' slots, and their keys, are on the target now; the others stayed.
    owners = await slotOwners(target.port);
    for (const ch of channels) {
      const slot = channelSlot(ch);
      assert.equal(owners[slot], moved.includes(ch) ? target.port : ownerBefore[ch], `${ch}'s master`);
      if (moved.includes(ch)) {
        assert.equal((await redisCli(target.port, "EXISTS", `herald:{${ch}}:meta`, `herald:{${ch}}:history`))[0], "2", `${ch}'s keys on the target`);
        assert.equal((await redisCli(source.port, "CLUSTER", "COUNTKEYSINSLOT", String(slot)))[0], "0", `${ch}: nothing left on the source`);
      }
    }
    assert.deepEqual({ source: slotsOf(source.port), target: slotsOf(target.port) },
      { source: slotsBefore.source - MOVE_SLOTS, target: slotsBefore.target + MOVE_SLOTS }, "slots moved");

    for (const c of clients) {
      const src = c.kind === "sse" ? c.client.events : c.client.inbox;
      for (const ch of channels) {
        const seqs = () => view(c, ch).filter((x) => x.kind === "pub").map((x) => x.data?.seq);
        await src.until(() => acked[ch].every((s) => seqs().includes(s)), { timeoutMs: 10_000, what: `${c.name} on ${ch}: every acknowledged publication` });
      }
    }
    await sleep(300); // duplicates, if any, would arrive now
    const maybeStored = new Set(refused.map((x) => x.s)); // a 503 may still have been stored (a timeout)
    for (const c of clients) {
      for (const ch of channels) {
        const list = view(c, ch);
        assert.deepEqual(list.filter((x) => x.kind === "gap"), [], `${c.name} on ${ch}: no gap`);
        const seqs = list.map((x) => x.data?.seq);
        assert.equal(new Set(seqs).size, seqs.length, `${c.name} on ${ch}: a publication twice`);
        assert.deepEqual(seqs.filter((s) => !maybeStored.has(s)), acked[ch], `${c.name} on ${ch}: every acknowledged publication, in order`);
        for (let j = 1; j < list.length; j++) assert.equal(list[j].offset, list[j - 1].offset + 1, `${c.name} on ${ch}: offset ${list[j].offset} after ${list[j - 1].offset}`);
      }
    }

    // /readyz follows the new slot map (refreshed every 2 s and on MOVED).
    for (const h of hs) {
      const r = await waitUntil(async () => {
        const x = await readyz(h.url);
        const row = (p) => x.json?.redis_nodes?.find((n) => n.node === `127.0.0.1:${p}`);
        return x.status === 200 && row(source.port)?.slots === slotsOf(source.port) && row(target.port)?.slots === slotsOf(target.port) && x;
      }, { timeoutMs: 8000, what: `${h.url}/readyz with the slots moved` });
      assert.equal(r.json.redis_nodes.reduce((n, x) => n + x.slots, 0), 16384, r.text);
    }
  });

  test("a master lost: /readyz answers 503 and its node list says which node is not connected", async () => {
    await third.kill("SIGKILL");
    for (const h of hs) {
      const r = await waitUntil(async () => {
        const x = await readyz(h.url);
        const row = x.json?.redis_nodes?.find((n) => n.node === `127.0.0.1:${third.port}`);
        return x.status === 503 && row && row.connected === false && x;
      }, { timeoutMs: 10_000, what: `${h.url}/readyz 503 naming the lost master` });
      assert.equal(r.json.error.code, "unavailable");
      assert.match(r.json.error.message, new RegExp(`${third.port}`), r.text);
      for (const m of [source, target]) {
        const row = r.json.redis_nodes.find((n) => n.node === `127.0.0.1:${m.port}`);
        assert.deepEqual({ role: row?.role, connected: row?.connected }, { role: "master", connected: true }, r.text);
      }
    }
  });
});
