// Herald on a real Redis Cluster (issue #11): 3 masters with 1 replica each
// (redis-server --cluster-enabled yes, started here on loopback ports and
// stopped by PID), three herald instances given two seeds in
// --redis-url=redis+cluster://..., channels spread over every master.
// Every publication reaches every subscriber (SSE and WebSocket) on every
// instance once, in order, offsets contiguous from 1; a non-Herald publisher
// runs publish.lua with `redis-cli -c` on a node that does not own the slot;
// a master killed (SIGKILL) under publishing: its replica is promoted,
// Herald follows it, and no subscriber ever sees an offset twice or a silent
// hole. Also bad cluster URLs and unreachable seeds. See docs/cluster.md.

import assert from "node:assert/strict";
import path from "node:path";
import { before, describe, test } from "node:test";

import { getJson, publish, publishOk, publishOnce, startHerald } from "../lib/herald.mjs";
import {
  afterRedisCluster,
  freePort,
  readyz,
  REPO,
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

const PER_CHANNEL = 6;

describe("bad Redis Cluster URLs", { timeout: 30_000 }, () => {
  test("a malformed redis+cluster URL stops start-up, naming the seed", async () => {
    await assert.rejects(startHerald(["--redis-url=redis+cluster://127.0.0.1:7000,,127.0.0.1:7001"]), /seed 2 is empty/);
    await assert.rejects(startHerald(["--redis-url=redis+cluster://127.0.0.1:7000/3"]), /database 0 only/);
  });

  test("unreachable seeds: the instance runs, not ready, and says why", async () => {
    const h = await startHerald([`--redis-url=redis+cluster://127.0.0.1:${await freePort()},127.0.0.1:${await freePort()}`]);
    try {
      // The reason names the trouble once the first round of seeds failed.
      const r = await waitUntil(async () => {
        const x = await readyz(h.url);
        assert.equal(x.status, 503, x.text);
        return /no Redis Cluster seed answers \(last: .*refused/i.test(x.json?.error?.message ?? "") && x;
      }, { timeoutMs: 8000, what: "a not-ready reason naming the seeds" });
      assert.equal(r.json.error.code, "unavailable");
    } finally {
      await h.stop();
    }
  });
});

describe("three instances on a 3-master Redis Cluster", { timeout: 150_000 }, () => {
  let cluster;
  let hs = [];
  const clients = [];
  let channels = []; // two per master
  let owners;
  const masterOf = {}; // channel -> port of its master at start

  before(async () => {
    cluster = await startRedisCluster({ masters: 3, replicas: 1 });
    // Every acknowledged publication is on a replica too (Redis WAIT).
    hs = await startCluster(cluster.url, 3, { via: "flag", args: ["--redis-wait-replicas=1"] });
    owners = await slotOwners(cluster.nodes[0].port);
    const perMaster = new Map();
    for (let i = 0; channels.length < 6 && i < 1000; i++) {
      const ch = `stream:rc${i}`;
      const slot = Number((await redisCli(cluster.nodes[0].port, "CLUSTER", "KEYSLOT", ch))[0]);
      const m = owners[slot];
      if ((perMaster.get(m) ?? 0) >= 2) continue;
      perMaster.set(m, (perMaster.get(m) ?? 0) + 1);
      channels.push(ch);
      masterOf[ch] = m;
    }
    assert.equal(perMaster.size, 3, "two channels on each of the three masters");
  }, { timeout: 60_000 });

  afterRedisCluster(() => ({ clients, hs, cluster }));

  // Each channel's pub/sub name has one shard subscription per instance on
  // `masterIs[ch]` and none on any other live node; no classic subscription anywhere.
  const assertSharded = async (chs, masterIs) => {
    const live = cluster.nodes.filter((n) => n.alive());
    const count = async (port, kind, name) => Number((await redisCli(port, "PUBSUB", kind, name))[1]);
    for (const ch of chs) {
      const name = `herald:{${ch}}:pub`;
      await waitUntil(async () => (await count(masterIs[ch], "SHARDNUMSUB", name)) === hs.length, {
        timeoutMs: 5000,
        what: `${name}: ${hs.length} shard subscriptions on ${masterIs[ch]}`,
      });
      for (const n of live) {
        assert.equal(await count(n.port, "NUMSUB", name), 0, `${name}: classic subscription on ${n.port}`);
        if (n.port !== masterIs[ch]) assert.equal(await count(n.port, "SHARDNUMSUB", name), 0, `${name}: shard subscription on ${n.port}`);
      }
    }
  };

  // A sentinel publication on a fresh connection (a pooled one may have been
  // closed while idle: EPIPE); returns its offsets.
  const publishSentinel = async (h, body) => {
    const r = await publishOnce(h.url, body);
    assert.equal(r.status, 200, r.text);
    return r.json.offsets;
  };

  const view = ({ kind, client }, ch) => {
    const items = kind === "sse" ? sseItems(client.events.items, ch, client.channels) : wsItems(client.inbox.items.slice(client.from), ch);
    return items.map((x) => (x.kind === "pub" ? { offset: x.offset, seq: x.data?.seq } : { gap: x.reason }));
  };

  test("every publication reaches every subscriber on every instance, in order, once", async () => {
    for (const [i, h] of hs.entries()) {
      clients.push({ name: `sse@${i}`, kind: "sse", client: await sseSubscribe(h.url, channels) });
      clients.push({ name: `ws@${i}`, kind: "ws", client: await wsSubscribeAll(h.url, channels) });
    }
    for (const { kind, client } of clients) client.from = kind === "sse" ? 0 : client.inbox.items.length;

    const expected = Object.fromEntries(channels.map((c) => [c, []]));
    let seq = 0;
    for (let round = 0; round < PER_CHANNEL; round++) {
      for (const [k, ch] of channels.entries()) {
        seq++;
        const h = hs[seq % 3];
        // Every third publication names two channels on different masters.
        const other = channels[(k + 2) % channels.length];
        const both = round % 3 === 2 && k % 2 === 0;
        const body = both ? { channels: [ch, other], event: "tick", data: { seq } } : { channel: ch, event: "tick", data: { seq } };
        const offsets = await publishOk(h.url, body);
        for (const c of both ? [ch, other] : [ch]) {
          assert.equal(offsets[c], expected[c].length + 1, `${c}: ${JSON.stringify(offsets)}`);
          expected[c].push({ offset: offsets[c], seq });
        }
      }
    }
    const total = Object.values(expected).reduce((n, l) => n + l.length, 0);
    for (const c of clients) {
      const got = () => channels.reduce((n, ch) => n + view(c, ch).length, 0);
      const src = c.kind === "sse" ? c.client.events : c.client.inbox;
      await src.until(() => got() >= total, { timeoutMs: 8000, what: `${c.name}: ${total} publications` });
    }
    // A sentinel on each channel: order is kept per channel, so a duplicate
    // would arrive before it (instead of waiting 300 ms for one).
    for (const ch of channels) {
      const sentinel = await publishSentinel(hs[0], { channel: ch, event: "tick", data: { seq: "sentinel" } });
      expected[ch].push({ offset: sentinel[ch], seq: "sentinel" });
    }
    for (const c of clients) {
      const src = c.kind === "sse" ? c.client.events : c.client.inbox;
      await src.until(() => channels.every((ch) => view(c, ch).some((x) => x.seq === "sentinel")), {
        timeoutMs: 8000,
        what: `${c.name}: the sentinel on every channel`,
      });
    }
    for (const c of clients) for (const ch of channels) assert.deepEqual(view(c, ch), expected[ch], `${c.name} on ${ch}`);
    for (const h of hs) assert.equal((await readyz(h.url)).status, 200);
  });

  test("/metrics and /healthz report each node: connected, slots owned, subscriptions, reconnects", async () => {
    for (const h of hs) {
      const m = await getJson(h.url, "/metrics");
      const series = (name) =>
        [...m.text.matchAll(new RegExp(`^${name}\\{node="([^"]+)"\\} (\\d+)$`, "gm"))].map((x) => ({ node: x[1], value: Number(x[2]) }));
      const slots = series("herald_redis_node_slots").filter((x) => x.value > 0);
      assert.equal(slots.length, 3, m.text);
      assert.equal(slots.reduce((n, x) => n + x.value, 0), 16384);
      for (const x of slots) assert.ok(owners.includes(Number(x.node.split(":").pop())), x.node);
      for (const x of series("herald_redis_node_connected")) assert.equal(x.value, 1, x.node);
      // Sharded pub/sub: this instance's subscriptions are counted on the masters of the
      // channels, two on each master, none elsewhere (the figures are refreshed every 2 s).
      const want = {};
      for (const ch of channels) want[masterOf[ch]] = (want[masterOf[ch]] ?? 0) + 1;
      const subs = await waitUntil(async () => {
        const again = (await getJson(h.url, "/metrics")).text;
        const held = Object.fromEntries(
          [...again.matchAll(/^herald_redis_node_subscriptions\{node="[^"]+:(\d+)"\} (\d+)$/gm)].map((x) => [x[1], Number(x[2])]),
        );
        return Object.entries(want).every(([p, n]) => (held[p] ?? 0) >= n) && held;
      }, { timeoutMs: 5000, what: "subscriptions counted per master" });
      for (const [p, n] of Object.entries(subs)) if (!want[p]) assert.equal(n, 0, `no subscription on ${p}: ${JSON.stringify(subs)}`);
      assert.match(m.text, /^# TYPE herald_redis_node_reconnects_total counter$/m);
      const health = await getJson(h.url, "/healthz");
      assert.equal(health.json.redis_nodes.filter((n) => n.slots > 0).length, 3, health.text);
      for (const [p, n] of Object.entries(want)) {
        const row = health.json.redis_nodes.find((x) => x.node.endsWith(`:${p}`));
        assert.ok(row && row.subscriptions >= n, `/healthz redis_nodes ${p}: ${health.text}`);
      }
    }
  });

  test("pub/sub is sharded: every instance SSUBSCRIBEs each channel on its master only, nothing classic", async () => {
    await assertSharded(channels, masterOf);
  });

  test("a non-Herald publisher: publish.lua with redis-cli -c from a node that does not own the slot", async () => {
    const ch = channels[0];
    const slot = Number((await redisCli(cluster.nodes[0].port, "CLUSTER", "KEYSLOT", ch))[0]);
    const elsewhere = cluster.nodes.find((n) => owners.includes(n.port) && n.port !== owners[slot]);
    const script = path.join(REPO, "net", "redis", "publish.lua");
    // The channel's position as stored (not as a client saw it: this test stands on its own).
    const position = await getJson(hs[0].url, `/v1/channels/${ch}`);
    assert.equal(position.status, 200, position.text);
    const out = await redisCli(elsewhere.port, "-c", "--eval", script, `herald:{${ch}}:meta`, `herald:{${ch}}:history`, ",",
      `herald:{${ch}}:pub`, ch, "tick", JSON.stringify({ seq: "cli" }), "256", "300", "fromcli", "300", "SPUBLISH");
    const offset = Number(out.at(-1));
    assert.equal(offset, position.json.offset + 1, out.join("|"));
    for (const c of clients) {
      const src = c.kind === "sse" ? c.client.events : c.client.inbox;
      await src.until(() => view(c, ch).some((x) => x.offset === offset), { timeoutMs: 5000, what: `${c.name}: the redis-cli publication` });
      assert.deepEqual(view(c, ch).at(-1), { offset, seq: "cli" }, c.name);
    }
  });

  test("a channel's slot migrated to another master under publishing (ASK, then MOVED or a new map): nothing lost or repeated", async () => {
    const ch = channels[2];
    const from = cluster.nodes.find((n) => n.port === masterOf[ch]);
    const to = cluster.nodes.find((n) => owners.includes(n.port) && n.port !== from.port);
    const id = async (n) => (await redisCli(n.port, "CLUSTER", "MYID"))[0];
    const [fromId, toId] = [await id(from), await id(to)];
    const slot = (await redisCli(from.port, "CLUSTER", "KEYSLOT", ch))[0];
    const marks = clients.map((c) => (c.kind === "sse" ? c.client.events.items.length : c.client.inbox.items.length));
    // Redis 7 counts the redirections it answered (INFO errorstats) and ASKING (commandstats).
    const stat = async (n, section, name, field) => {
      const line = (await redisCli(n.port, "INFO", section)).find((l) => l.startsWith(`${name}:`));
      return line ? Number(new RegExp(`${field}=(\\d+)`).exec(line)[1]) : 0;
    };
    // ... and Herald counts the ones it followed (herald_redis_redirects_total, every instance).
    const followedRedirects = async () => {
      const sum = { moved: 0, ask: 0 };
      for (const h of hs) {
        const text = (await getJson(h.url, "/metrics")).text;
        for (const kind of ["moved", "ask"]) sum[kind] += Number(new RegExp(`^herald_redis_redirects_total\\{kind="${kind}"\\} (\\d+)$`, "m").exec(text)[1]);
      }
      return sum;
    };
    await redisCli(from.port, "CONFIG", "RESETSTAT");
    await redisCli(to.port, "CONFIG", "RESETSTAT");
    const followedBefore = await followedRedirects();
    const acked = [];
    const failed = [];
    let stop = false;
    let seq = 500;
    const loop = (async () => {
      for (let i = 0; !stop; i++) {
        const s = ++seq;
        const r = await publish(hs[i % hs.length].url, { channel: ch, event: "tick", data: { seq: s } }).catch((e) => ({ status: 0, text: String(e) }));
        if (r.status === 200) acked.push(s);
        else failed.push(`${r.status} ${r.text}`);
        await sleep(5);
      }
    })();
    try {
      await waitUntil(() => acked.length + failed.length >= 3, { what: "publishing under way" });
      // The Redis Cluster specification's live resharding, one slot by hand.
      await redisCli(to.port, "CLUSTER", "SETSLOT", slot, "IMPORTING", fromId);
      await redisCli(from.port, "CLUSTER", "SETSLOT", slot, "MIGRATING", toId);
      const marked = acked.length + failed.length;
      await waitUntil(() => acked.length + failed.length >= marked + 3, { what: "publications while the slot is MIGRATING" });
      const keys = await redisCli(from.port, "CLUSTER", "GETKEYSINSLOT", slot, "100");
      assert.ok(keys.includes(`herald:{${ch}}:meta`), keys.join(" "));
      const moved = await redisCli(from.port, "MIGRATE", "127.0.0.1", String(to.port), "", "0", "5000", "KEYS", ...keys);
      assert.deepEqual(moved, ["OK"]);
      // The old owner answers ASK now: wait until it has (Redis counts it).
      await waitUntil(async () => (await stat(from, "errorstats", "errorstat_ASK", "count")) > 0, {
        timeoutMs: 10_000,
        what: "an ASK answered by the old owner to a publication",
      });
      for (const n of [to, from, ...cluster.nodes.filter((x) => owners.includes(x.port) && x !== to && x !== from)]) {
        await redisCli(n.port, "CLUSTER", "SETSLOT", slot, "NODE", toId);
      }
      // ... and MOVED until Herald's map has the new owner: publications go on.
      const after = acked.length;
      await waitUntil(() => acked.length >= after + 5, { timeoutMs: 10_000, what: "publications after the migration" });
    } finally {
      stop = true;
      await loop;
    }
    assert.deepEqual(failed, [], "every publication stored during the migration");
    const items = (c, k) =>
      c.kind === "sse"
        ? sseItems(c.client.events.items.slice(marks[k]), ch, c.client.channels, { startId: c.client.events.items.slice(0, marks[k]).filter((e) => e.id).at(-1)?.id })
        : wsItems(c.client.inbox.items.slice(marks[k]), ch);
    for (const [k, c] of clients.entries()) {
      const src = c.kind === "sse" ? c.client.events : c.client.inbox;
      await src.until(() => items(c, k).length >= acked.length, { timeoutMs: 8000, what: `${c.name}: ${acked.length} publications` });
    }
    // A sentinel on the channel: order is kept per channel, so a duplicate
    // would arrive before it (instead of waiting 300 ms for one).
    await publishSentinel(hs[0], { channel: ch, event: "tick", data: { seq: "sentinel" } });
    acked.push("sentinel");
    for (const [k, c] of clients.entries()) {
      const src = c.kind === "sse" ? c.client.events : c.client.inbox;
      await src.until(() => items(c, k).some((x) => x.data?.seq === "sentinel"), { timeoutMs: 8000, what: `${c.name}: the sentinel` });
    }
    for (const [k, c] of clients.entries()) {
      const list = items(c, k);
      assert.deepEqual(list.map((x) => x.data?.seq), acked, `${c.name}: every publication once, in order`);
      for (let j = 1; j < list.length; j++) assert.equal(list[j].offset, list[j - 1].offset + 1, `${c.name}: offsets`);
    }
    // Herald was told ASK during the migration (and maybe MOVED after it).
    const redirects = {
      ask: await stat(from, "errorstats", "errorstat_ASK", "count"),
      asking: await stat(to, "commandstats", "cmdstat_asking", "calls"),
      moved: await stat(from, "errorstats", "errorstat_MOVED", "count"),
    };
    console.log(`slot migration: ${acked.length} publications, redirections ${JSON.stringify(redirects)}`);
    assert.ok(redirects.ask > 0 && redirects.asking >= redirects.ask, JSON.stringify(redirects));
    // MOVED is a race, not a rule: the importing node takes the slot first (its
    // SETSLOT NODE bumps the epoch and gossips), and the old owner's sunsubscribe
    // makes Herald refresh its map. When that map arrives before the next command
    // would have reached the old owner, nothing is ever answered MOVED (seen on a
    // fast CI machine). Whichever way Herald learned it, every publication above
    // was stored and delivered; redis.cluster_client covers MOVED itself.
    if (redirects.moved === 0) console.log("slot migration: Herald's map named the new owner before any command met the old one (no MOVED)");
    // ... and counted them in /metrics.
    const followed = await followedRedirects();
    for (const kind of ["moved", "ask"]) followed[kind] -= followedBefore[kind];
    // Every ASK answered a publish, and Herald followed each. MOVED counts are
    // not equal: Redis also answers MOVED to a shard SSUBSCRIBE of a
    // channel Herald already placed on the new owner (the map refresh after
    // sunsubscribe came first), which is nothing to follow (seen on CI:
    // Redis 3 MOVED, Herald 0). Herald never follows more than Redis answered.
    assert.ok(followed.ask >= redirects.ask, JSON.stringify({ followed, redirects }));
    assert.ok(followed.moved <= redirects.moved, JSON.stringify({ followed, redirects }));
    // The keys live on the new owner only.
    assert.equal((await redisCli(to.port, "EXISTS", `herald:{${ch}}:meta`))[0], "1");
    assert.equal((await redisCli(from.port, "CLUSTER", "COUNTKEYSINSLOT", slot))[0], "0");
    masterOf[ch] = to.port;
    owners = await slotOwners(to.port);
    // Every instance's shard subscriber followed the slot: subscribed on the new owner only.
    await assertSharded([ch], masterOf);
  });

  test("a master killed (SIGKILL) under publishing: replica promoted, Herald follows, no acknowledged publication lost", async () => {
    const victim = masterOf[channels[0]];
    const hit = channels.filter((c) => masterOf[c] === victim);
    const node = cluster.nodes.find((n) => n.port === victim);
    const marks = clients.map((c) => (c.kind === "sse" ? c.client.events.items.length : c.client.inbox.items.length));
    const acked = Object.fromEntries(channels.map((c) => [c, []])); // seqs answered 200
    let seq = 1000;
    let stop = false;
    let killedAt = 0;
    let ackedAfterKill = 0;
    let refusedDuringFailover = 0;
    const unexpected = []; // answers other than 200 and the three 503s of docs/protocol.md "Publish outcomes"
    const notStored = Object.fromEntries(channels.map((c) => [c, []])); // seqs answered "did not store"
    const loop = (async () => {
      for (let i = 0; !stop; i++) {
        const ch = channels[i % channels.length];
        const h = hs[i % hs.length];
        const s = ++seq;
        const r = await publish(h.url, { channel: ch, event: "tick", data: { seq: s } }).catch((e) => ({ status: 0, text: String(e) }));
        if (r.status === 200) {
          acked[ch].push(s);
          if (killedAt && hit.includes(ch)) ackedAfterKill++;
        } else {
          const message = r.json?.error?.message ?? "";
          if (r.status !== 503) unexpected.push(`${r.status} ${r.text}`);
          else if (/^Redis did not store the publication /.test(message)) notStored[ch].push(s);
          else if (!/^Redis (may have stored|stored) the publication/.test(message)) unexpected.push(`${r.status} ${r.text}`);
          refusedDuringFailover++;
        }
        await sleep(5);
      }
    })();
    let failoverMs;
    let promotedMs;
    try {
      await waitUntil(() => channels.every((c) => acked[c].length >= 2), { what: "publishing under way on every channel" });
      killedAt = Date.now();
      await node.kill("SIGKILL");
      // The replica is promoted within a few cluster-node-timeouts. Its shard
      // has no replica left, so WAIT 1 cannot be met and publications on its
      // channels are answered 503 until the old master is back, as a replica
      // of the new one (what an orchestrator does); then Herald, which has
      // read the new map, stores and acknowledges on those channels again.
      const survivor = cluster.nodes.find((n) => n.port !== victim);
      await waitUntil(async () => (await slotOwners(survivor.port)).every((p) => p !== victim && p !== 0), {
        timeoutMs: 20_000,
        intervalMs: 100,
        what: "a replica promoted in place of the killed master",
      });
      promotedMs = Date.now() - killedAt;
      await node.restart();
      await waitUntil(async () => ackedAfterKill >= 2 * hit.length, { timeoutMs: 30_000, intervalMs: 100, what: "publications on the failed master's channels after the failover" });
      failoverMs = Date.now() - killedAt;
      for (const h of hs) await waitUntil(async () => (await readyz(h.url)).status === 200, { timeoutMs: 10_000, what: `${h.url} ready again` });
    } finally {
      stop = true;
      await loop;
    }
    assert.deepEqual(unexpected, [], "every publish is answered 200 or one of the three 503s");
    console.log(`failover: replica promoted ${promotedMs} ms after SIGKILL, publications acknowledged again after ${failoverMs} ms; ${refusedDuringFailover} answered 503 meanwhile`);

    const items = (c, k, ch) =>
      c.kind === "sse"
        ? sseItems(c.client.events.items.slice(marks[k]), ch, c.client.channels, { startId: c.client.events.items.slice(0, marks[k]).filter((e) => e.id).at(-1)?.id })
        : wsItems(c.client.inbox.items.slice(marks[k]), ch);
    for (const ch of channels) {
      for (const [k, c] of clients.entries()) {
        const src = c.kind === "sse" ? c.client.events : c.client.inbox;
        const seqs = () => items(c, k, ch).filter((x) => x.kind === "pub").map((x) => x.data?.seq);
        await src.until(() => acked[ch].every((s) => seqs().includes(s)), { timeoutMs: 10_000, what: `${c.name} on ${ch}: every acknowledged publication` });
      }
    }
    // A sentinel on each channel: order is kept per channel, so a duplicate
    // would arrive before it (instead of waiting 300 ms for one).
    for (const ch of channels) await publishSentinel(hs[0], { channel: ch, event: "tick", data: { seq: `sentinel-${ch}` } });
    for (const ch of channels) {
      for (const [k, c] of clients.entries()) {
        const src = c.kind === "sse" ? c.client.events : c.client.inbox;
        await src.until(() => items(c, k, ch).some((x) => x.data?.seq === `sentinel-${ch}`), { timeoutMs: 8000, what: `${c.name} on ${ch}: the sentinel` });
      }
    }
    for (const ch of channels) {
      for (const [k, c] of clients.entries()) {
        const list = items(c, k, ch);
        const seqs = list.filter((x) => x.kind === "pub").map((x) => x.data?.seq);
        // Nothing twice; every acknowledged publication, in publishing order.
        assert.equal(new Set(seqs).size, seqs.length, `${c.name} on ${ch}: a publication twice`);
        const ackedSeen = seqs.filter((s) => acked[ch].includes(s));
        assert.deepEqual(ackedSeen, acked[ch], `${c.name} on ${ch}`);
        // "did not store" only where the script never ran: never delivered.
        const untrue = seqs.filter((s) => notStored[ch].includes(s));
        assert.deepEqual(untrue, [], `${c.name} on ${ch}: delivered although answered "did not store"`);
        // Offsets only grow, by one, unless an explicit gap says why.
        let prev = null;
        for (const x of list) {
          if (x.kind === "gap") {
            prev = null;
            continue;
          }
          if (prev !== null) assert.equal(x.offset, prev + 1, `${c.name} on ${ch}: offset ${x.offset} after ${prev} with no gap notice`);
          prev = x.offset;
        }
      }
    }
    // The promoted replica's channels are SSUBSCRIBEd there now, by every instance.
    owners = await slotOwners(cluster.nodes.find((n) => n.port !== victim).port);
    const nowMaster = {};
    for (const ch of channels) nowMaster[ch] = owners[Number((await redisCli(owners.find((p) => p), "CLUSTER", "KEYSLOT", ch))[0])];
    for (const ch of hit) assert.notEqual(nowMaster[ch], victim, ch);
    await assertSharded(channels, nowMaster);
  });

  test("without --redis-wait-replicas, a failover that lost a channel's tail: new epoch, explicit gap, no offset reused, other channels untouched", async () => {
    // A fourth instance publishes without WAIT: Redis acknowledges before replicating.
    const d = await startHerald([`--redis-url=${cluster.url}`]);
    try {
      await waitUntil(async () => (await readyz(d.url)).status === 200, { timeoutMs: 10_000, what: "the fourth instance ready" });
      const now = await slotOwners(cluster.nodes.find((n) => n.alive()).port);
      const slotOf = async (c) => Number((await redisCli(cluster.nodes.find((n) => n.alive()).port, "CLUSTER", "KEYSLOT", c))[0]);
      const ch = channels[4];
      const chSlot = await slotOf(ch);
      const master = cluster.nodes.find((n) => n.port === now[chSlot]);
      const sibling = [];
      for (const c of channels) if (c !== ch && now[await slotOf(c)] === master.port) sibling.push(c);
      let replica;
      for (const n of cluster.nodes.filter((x) => x.alive() && x !== master)) {
        const info = await redisCli(n.port, "INFO", "replication");
        if (info.includes("role:slave") && info.includes(`master_port:${master.port}`)) replica = n;
      }
      assert.ok(replica, "the channel's master has a replica");
      const marks = clients.map((c) => (c.kind === "sse" ? c.client.events.items.length : c.client.inbox.items.length));
      const items = (c, k, name) =>
        c.kind === "sse"
          ? sseItems(c.client.events.items.slice(marks[k]), name, c.client.channels, { startId: c.client.events.items.slice(0, marks[k]).filter((e) => e.id).at(-1)?.id })
          : wsItems(c.client.inbox.items.slice(marks[k]), name);
      const delivered = async (n) => {
        for (const [k, c] of clients.entries()) {
          const src = c.kind === "sse" ? c.client.events : c.client.inbox;
          await src.until(() => items(c, k, ch).filter((x) => x.kind === "pub").length >= n, { timeoutMs: 8000, what: `${c.name}: ${n} publications` });
        }
      };
      const oldEpoch = (await redisCli(master.port, "HGET", `herald:{${ch}}:meta`, "epoch"))[0];

      // The tail: stored and acknowledged by the master while its replica is frozen.
      replica.signal("SIGSTOP");
      // Cut the replication link too: what the master already wrote to it would
      // still reach the replica when it thaws.
      await redisCli(master.port, "CLIENT", "KILL", "TYPE", "replica");
      const tail = [];
      try {
        // Through an instance with --redis-wait-replicas=1: the frozen replica
        // cannot confirm; the master stored (and published) it all the same,
        // and the 503 says so, so that the publisher retries with its key.
        const unconfirmed = await publish(hs[0].url, { channel: ch, event: "tick", data: { seq: "tail0" } });
        assert.equal(unconfirmed.status, 503, JSON.stringify(unconfirmed.json));
        assert.match(unconfirmed.json.error.message, /^Redis stored the publication, but not replicated: 0 of 1/, unconfirmed.json.error.message);
        tail.push({ seq: "tail0" });
        for (let i = 1; i <= 4; i++) tail.push({ seq: `tail${i}`, offset: (await publishOk(d.url, { channel: ch, event: "tick", data: { seq: `tail${i}` } }))[ch] });
        await delivered(tail.length);
        await master.kill("SIGKILL");
      } finally {
        replica.signal("SIGCONT");
      }
      // The replica, which never got the tail, is promoted.
      const survivor = cluster.nodes.find((n) => n.alive() && n !== replica);
      await waitUntil(async () => (await slotOwners(survivor.port))[chSlot] === replica.port, {
        timeoutMs: 20_000,
        intervalMs: 100,
        what: "the frozen replica promoted",
      });
      // The instances that delivered the tail find the history went backwards
      // when they sync again, and move the channel to a new epoch.
      await waitUntil(async () => {
        const e = (await redisCli(replica.port, "HGET", `herald:{${ch}}:meta`, "epoch"))[0];
        return e && e !== oldEpoch;
      }, { timeoutMs: 15_000, intervalMs: 100, what: "a new epoch for the channel that lost its tail" }).catch((e) => {
        console.log("diagnostics:", ch, chSlot, master.port, replica.port, oldEpoch, hs[0].log().split("\n").filter((l) => /redis/.test(l)).slice(-15).join("\n"));
        throw e;
      });
      const after = [];
      await waitUntil(async () => {
        const r = await publish(d.url, { channel: ch, event: "tick", data: { seq: `after${after.length + 1}` } });
        if (r.status === 200) after.push({ seq: `after${after.length + 1}`, offset: r.json.offsets[ch] });
        return after.length === 3;
      }, { timeoutMs: 15_000, intervalMs: 50, what: "publications on the new master" });
      assert.deepEqual(after.map((x) => x.offset), [1, 2, 3], "the new epoch starts at offset 1");
      await delivered(tail.length + after.length);
      await sleep(300);

      for (const [k, c] of clients.entries()) {
        const list = items(c, k, ch);
        const shape = list.map((x) => (x.kind === "gap" ? `gap:${x.reason}` : x.data?.seq));
        // The tail as delivered, then an explicit gap, then the new epoch: nothing silent, nothing twice.
        assert.deepEqual(shape, [...tail.map((x) => x.seq), "gap:epoch_changed", ...after.map((x) => x.seq)], `${c.name}: ${JSON.stringify(shape)}`);
        if (c.kind === "sse") {
          const pubs = list.filter((x) => x.kind === "pub");
          const keys = pubs.map((x) => `${x.epoch}:${x.offset}`);
          assert.equal(new Set(keys).size, keys.length, `${c.name}: an offset reused`);
          assert.ok(pubs.slice(0, tail.length).every((x) => x.epoch === oldEpoch));
          assert.ok(pubs.slice(tail.length).every((x) => x.epoch !== oldEpoch));
        }
        // The other channels, including the other one on the failed master, lost nothing: no gap.
        for (const other of channels.filter((x) => x !== ch)) {
          assert.deepEqual(items(c, k, other).filter((x) => x.kind === "gap"), [], `${c.name} on ${other} (${sibling.includes(other) ? "same master" : "other master"})`);
        }
      }
      await master.restart(); // back as a replica, as after the first failover
    } finally {
      await d.stop();
    }
  });
});
