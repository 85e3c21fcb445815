// Redis problems an operator can see and fix (issue 19, section 2), with a
// real redis-server on loopback:
// - an instance that cannot use Redis (wrong port, wrong password, no
//   password, an ACL that refuses the SUBSCRIBE of a watched channel) says
//   why: in the log (once per reason, not once per attempt), in /readyz's
//   body and as herald_redis_down_reason's label, and retries with backoff
//   (an ACL that refuses the subscriber's SUBSCRIBE made it reconnect ~13
//   times a second);
// - every name Herald uses is under --redis-prefix: two instances logged in
//   as an ACL user limited to the prefix (`~herald:* &herald:* +@all`)
//   become ready, deliver a publication made on one to a client of the other,
//   and answer its history; on a single Redis and on a Redis Cluster.
// See docs/cluster.md ("Redis ACL", "Readiness") and docs/metrics.md.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { publishOk, sseCurl, startHerald } from "../lib/herald.mjs";
import { scrape } from "../lib/metrics.mjs";
import {
  freePort,
  readyz,
  redisCli,
  sseItems,
  sseSubscribe,
  startRedis,
  startRedisCluster,
  waitReady,
  waitUntil,
  wsItems,
  wsSubscribeAll,
} from "./lib.mjs";

const ACL = ["on", ">pw", "~herald:*", "&herald:*", "+@all"];

/** Sets up the ACL user "herald" on the Redis at `port`. */
async function aclUser(port, rules = ACL) {
  const out = await redisCli(port, "ACL", "SETUSER", "herald", ...rules);
  assert.match(out.join("\n"), /OK/);
}

/** The number of connections Redis accepted since it started. */
async function connectionsReceived(port) {
  const info = (await redisCli(port, "INFO", "stats")).join("\n");
  return Number(/total_connections_received:(\d+)/.exec(info)[1]);
}

/** The herald_redis_down_reason sample that is 1 (its reason), or "none". */
async function downReason(url) {
  const m = await scrape(url);
  for (const [key, value] of m.series) {
    const r = /^herald_redis_down_reason\{reason="([a-z_]+)"\}$/.exec(key);
    if (r && value === 1) return r[1];
  }
  return "none";
}

/**
 * Starts herald on `redisUrl` (more `args`), waits until /readyz's reason
 * matches `message`, and checks the log line and the metric label.
 */
async function expectNotReady(redisUrl, { args = [], message, label }) {
  const h = await startHerald([`--redis-url=${redisUrl}`, ...args]);
  try {
    const r = await waitUntil(
      async () => {
        const x = await readyz(h.url);
        assert.equal(x.status, 503, x.text);
        return message.test(x.json?.error?.message ?? "") && x;
      },
      { timeoutMs: 8000, what: `/readyz naming ${message}` },
    );
    assert.equal(r.json.error.code, "unavailable");
    assert.match(r.json.error.message, /^Redis unreachable: /);
    await waitUntil(async () => (await downReason(h.url)) === label, {
      timeoutMs: 3000,
      what: `herald_redis_down_reason{reason="${label}"} 1`,
    });
    const logged = h.log().split("\n").filter((l) => /redis: not connected: /.test(l));
    assert.ok(logged.some((l) => message.test(l)), `a log line naming ${message}:\n${h.log()}`);
    return h;
  } catch (err) {
    await h.stop();
    throw err;
  }
}

describe("a Redis this instance cannot use: the reason, seen and fixed", { timeout: 60_000 }, () => {
  test("wrong port: connection refused, logged once, not once per attempt", async () => {
    const h = await expectNotReady(`redis://127.0.0.1:${await freePort()}`, {
      message: /Connection refused/,
      label: "connection_refused",
    });
    try {
      // 1.5 s more: several attempts later (backoff 100 ms doubling), still one line.
      assert.equal((await scrape(h.url)).get("herald_redis_up"), 0);
      await new Promise((r) => setTimeout(r, 1500));
      const lines = h.log().split("\n").filter((l) => /redis: not connected: /.test(l));
      assert.equal(lines.length, 1, `one line for one reason:\n${h.log()}`);
    } finally {
      await h.stop();
    }
  });

  test("wrong password (WRONGPASS) and no password (NOAUTH): auth", async () => {
    const redis = await startRedis(); // answers PING without a password until:
    try {
      await redisCli(redis.port, "CONFIG", "SET", "requirepass", "right");
      const wrong = await expectNotReady(`redis://:wrong@127.0.0.1:${redis.port}`, {
        message: /AUTH failed: WRONGPASS/,
        label: "auth",
      });
      await wrong.stop();
      const none = await expectNotReady(redis.url, { message: /NOAUTH/, label: "auth" });
      await none.stop();
    } finally {
      await redis.kill("SIGKILL");
    }
  });

  test("an ACL that refuses the prefix's channels: NOPERM naming the channel once one is watched, with backoff", async () => {
    const redis = await startRedis();
    try {
      await aclUser(redis.port);
      // The user may use herald:* only; this instance's prefix is other:.
      const h = await startHerald([`--redis-url=redis://herald:pw@127.0.0.1:${redis.port}`, "--redis-prefix=other:"]);
      let sse = null;
      try {
        // Nothing refused yet: the subscriber's heartbeat is a PING, which
        // needs no channel permission (there was a probe channel once, whose
        // SUBSCRIBE the ACL refused at connect).
        await waitReady(h.url, 8000);
        // A watched channel: its SUBSCRIBE is refused, and that is the reason.
        sse = sseCurl(`${h.url}/v1/sse?channel=stream:acl2`);
        assert.equal(await sse.status, 200);
        const message = /SUBSCRIBE of other:\{stream:acl2\}:pub failed: NOPERM/;
        const r = await waitUntil(
          async () => {
            const x = await readyz(h.url);
            return x.status === 503 && message.test(x.json?.error?.message ?? "") && x;
          },
          { timeoutMs: 8000, what: `/readyz naming ${message}` },
        );
        assert.equal(r.json.error.code, "unavailable");
        assert.match(r.json.error.message, /^Redis unreachable: subscriber: /);
        await waitUntil(async () => (await downReason(h.url)) === "noperm", {
          timeoutMs: 3000,
          what: 'herald_redis_down_reason{reason="noperm"} 1',
        });
        // Was: about 13 new connections a second, forever (~40 here). With a
        // backoff of 100 ms doubling to 5 s: at most 6 subscriber attempts in
        // 3 s (delays of at least 50, 100, 200, 400, 800, 1600 ms), plus the
        // redis-cli connection of the second INFO.
        const a = await connectionsReceived(redis.port);
        await new Promise((r) => setTimeout(r, 3000));
        const b = await connectionsReceived(redis.port);
        assert.ok(b - a <= 10, `${b - a} connections in 3 s`);
        assert.equal((await readyz(h.url)).status, 503);
        // It was up, so the line is "redis: down (<reason>)"; the attempts
        // after it fail for the same reason and add no line.
        const lines = h.log().split("\n").filter((l) => /redis: (down|not connected)/.test(l));
        assert.ok(lines.some((l) => message.test(l)), `a log line naming ${message}:\n${h.log()}`);
        assert.ok(lines.length <= 2, `the reason logged once, not per attempt:\n${h.log()}`);
      } finally {
        await sse?.close().catch(() => {});
        await h.stop();
      }
    } finally {
      await redis.kill("SIGKILL");
    }
  });
});

/**
 * Two instances on `redisUrl`: a publication made on the first reaches an
 * SSE and a WebSocket client of the second, and both instances answer the
 * channel's history from Redis.
 */
async function basicScenario(redisUrl, args = []) {
  const hs = [];
  const clients = [];
  try {
    for (let i = 0; i < 2; i++) hs.push(await startHerald([`--redis-url=${redisUrl}`, ...args]));
    for (const h of hs) await waitReady(h.url, 10_000);
    const channel = "stream:acl1";
    const sse = await sseSubscribe(hs[1].url, [channel]);
    clients.push(sse);
    const ws = await wsSubscribeAll(hs[1].url, [channel]);
    clients.push(ws);
    const from = ws.inbox.items.length;
    const offsets = [];
    for (let seq = 1; seq <= 3; seq++) offsets.push((await publishOk(hs[0].url, { channel, event: "tick", data: { seq } }))[channel]);
    assert.deepEqual(offsets, [1, 2, 3]);
    await sse.events.until(() => sseItems(sse.events.items, channel, sse.channels).length >= 3, {
      what: "3 publications over SSE",
    });
    await ws.inbox.until(() => wsItems(ws.inbox.items.slice(from), channel).length >= 3, {
      what: "3 publications over WebSocket",
    });
    const seen = (items) => items.map((x) => x.data?.seq);
    assert.deepEqual(seen(sseItems(sse.events.items, channel, sse.channels)), [1, 2, 3]);
    assert.deepEqual(seen(wsItems(ws.inbox.items.slice(from), channel)), [1, 2, 3]);
    for (const h of hs) {
      const res = await fetch(`${h.url}/api/history`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ channel, limit: 10 }),
      });
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.deepEqual(
        body.result.publications.map((p) => p.data.seq),
        [1, 2, 3],
        JSON.stringify(body),
      );
    }
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    await Promise.all(hs.map((h) => h.stop()));
  }
}

describe("an ACL user limited to the prefix (~herald:* &herald:* +@all)", { timeout: 90_000 }, () => {
  test("a single Redis: ready, delivered across instances, history", async () => {
    // Was: never ready (the subscriber's probe channel was outside the
    // prefix), publishes answered 200 but not delivered live.
    const redis = await startRedis();
    try {
      await aclUser(redis.port);
      await basicScenario(`redis://herald:pw@127.0.0.1:${redis.port}`);
    } finally {
      await redis.kill("SIGKILL");
    }
  });

  test("a Redis Cluster (3 masters): ready, delivered across instances, history", async () => {
    const cluster = await startRedisCluster({ masters: 3, replicas: 0 });
    try {
      for (const n of cluster.nodes) await aclUser(n.port);
      await basicScenario(`redis+cluster://herald:pw@${cluster.seeds.join(",")}`);
    } finally {
      await cluster.stop();
    }
  });
});

describe("--redis-wait-replicas=1: ready only when a publish can be acknowledged", { timeout: 60_000 }, () => {
  test("no replica: not ready, saying so; a replica in sync: ready and the next publish is 200; a frozen replica: not ready", async () => {
    // Was: /readyz 200 at once, and the first publish after it answered 503
    // "stored, but not replicated".
    const master = await startRedis();
    let replica = null;
    const h = await startHerald([`--redis-url=${master.url}`, "--redis-wait-replicas=1"]);
    try {
      const r = await waitUntil(
        async () => {
          const x = await readyz(h.url);
          assert.equal(x.status, 503, x.text);
          return /0 replica\(s\) connected and in sync; --redis-wait-replicas=1 needs 1/.test(x.json?.error?.message ?? "") && x;
        },
        { timeoutMs: 8000, what: "/readyz naming the missing replica" },
      );
      assert.match(r.json.error.message, /^Redis replicas: /);
      await waitUntil(async () => (await downReason(h.url)) === "replicas", { what: "reason replicas" });
      replica = await startRedis({ extra: ["--replicaof", "127.0.0.1", String(master.port)] });
      await waitReady(h.url, 15_000);
      // Ready means acknowledged: the first publish after it is stored and replicated.
      const offsets = await publishOk(h.url, { channel: "stream:wr1", event: "e", data: { n: 1 } });
      assert.equal(offsets["stream:wr1"], 1);
      assert.equal(await downReason(h.url), "none");
      // A replica that stops answering: INFO still says online, WAIT does not pass.
      replica.signal("SIGSTOP");
      await waitUntil(
        async () => {
          const x = await readyz(h.url);
          return x.status === 503 && /confirmed by 0 of 1 replica/.test(x.json?.error?.message ?? "");
        },
        { timeoutMs: 8000, what: "/readyz 503 while the replica is frozen" },
      );
      replica.signal("SIGCONT");
      await waitReady(h.url, 15_000);
    } finally {
      replica?.signal("SIGCONT");
      await h.stop();
      await replica?.kill("SIGKILL");
      await master.kill("SIGKILL");
    }
  });
});

describe("--redis-wait-replicas=1 on a Redis Cluster without replicas", { timeout: 60_000 }, () => {
  test("not ready, naming a master without a replica in sync", async () => {
    // Was: /readyz 200, then every publish answered 503 "stored, but not replicated".
    const cluster = await startRedisCluster({ masters: 3, replicas: 0 });
    let h = null;
    try {
      h = await startHerald([`--redis-url=redis+cluster://${cluster.seeds.join(",")}`, "--redis-wait-replicas=1"]);
      const r = await waitUntil(
        async () => {
          const x = await readyz(h.url);
          assert.equal(x.status, 503, x.text);
          return /^Redis replicas: master 127\.0\.0\.1:\d+ has 0 replica\(s\) connected and in sync/.test(x.json?.error?.message ?? "") && x;
        },
        { timeoutMs: 8000, what: "/readyz naming a master without a replica" },
      );
      assert.equal(r.json.error.code, "unavailable");
      await waitUntil(async () => (await downReason(h.url)) === "replicas", { what: "reason replicas" });
    } finally {
      await h?.stop();
      await cluster.stop();
    }
  });
});
