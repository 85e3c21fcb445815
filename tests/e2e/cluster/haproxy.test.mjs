// Cluster mode behind HAProxy (docker/haproxy.cfg: round robin, no sticky
// sessions, health checks on /readyz): Redis, three herald instances and
// HAProxy. 1,000 SSE clients connect through HAProxy to `stream:lb`; every
// instance gets a share (each /healthz `connections` > 200); one publication
// made directly on one instance reaches all 1,000 within 5 s. Then the clients
// close and the instances see their connections go promptly (`option abortonclose`).
// See docs/cluster.md ("Deployment").

import assert from "node:assert/strict";
import http from "node:http";
import { describe, test } from "node:test";

import { SseParser, getJson, publishOk } from "../lib/herald.mjs";
import { numsub, suiteCluster, waitUntil } from "./lib.mjs";

const LB = "stream:lb";
const CLIENTS = 1000;
const BATCH = 50; // connections opened concurrently
// Short SSE heartbeat, so that without `option abortonclose` (HAProxy then
// closes the server side of an idle SSE stream only when Herald writes to
// it) the drain test below still ends, and fails on its < 1 s check.
const HEARTBEAT = 2;

/**
 * A minimal SSE client over node:http (no keep-alive, no pooling limit):
 * resolves once the response head arrived; `events` grows as events arrive.
 */
function openSse(agent, baseUrl, path) {
  return new Promise((resolve, reject) => {
    const client = { events: [], status: null, ended: false, req: null, lbAt: null };
    const req = http.get(`${baseUrl}${path}`, { agent, headers: { accept: "text/event-stream" } }, (res) => {
      client.status = res.statusCode;
      client.headers = res.headers;
      res.setEncoding("utf8");
      const parser = new SseParser({
        onEvent: (e) => {
          client.events.push(e);
          if (e.event === "lb" && client.lbAt === null) client.lbAt = Date.now();
        },
      });
      res.on("data", (chunk) => parser.feed(chunk));
      res.on("end", () => (client.ended = true));
      res.on("error", () => (client.ended = true));
      resolve(client);
    });
    client.req = req;
    req.on("error", (err) => {
      client.ended = true;
      reject(err);
    });
    req.setTimeout(10_000, () => req.destroy(new Error("SSE head timeout")));
  });
}

describe("1,000 SSE clients through HAProxy", { timeout: 80_000 }, () => {
  const clients = [];
  let drainMs = null;
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const { redis, hs, lb } = suiteCluster(3, {
    via: "flag",
    args: [`--sse-heartbeat=${HEARTBEAT}`],
    haproxy: true,
    beforeStop: async () => {
      for (const c of clients) c.req.destroy();
      agent.destroy();
    },
  });

  test("HAProxy answers /healthz and /readyz from the instances", async (t) => {
    if (lb.overridden) t.diagnostic(`haproxy: docker/haproxy.cfg could not start here; loaded first: ${lb.overridden}`);
    const health = await getJson(lb.url, "/healthz");
    assert.equal(health.status, 200);
    assert.equal(health.json.mode, "cluster");
    assert.equal((await getJson(lb.url, "/readyz")).status, 200);
  });

  test("every instance gets a share; one publication reaches all 1,000 within 5 s", async (t) => {
    const t0 = Date.now();
    for (let i = 0; i < CLIENTS; i += BATCH) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(BATCH, CLIENTS - i) }, () => openSse(agent, lb.url, `/v1/sse?channel=${LB}`)),
      );
      clients.push(...batch);
    }
    const openMs = Date.now() - t0;
    assert.equal(clients.length, CLIENTS);
    const statuses = {};
    for (const c of clients) statuses[c.status] = (statuses[c.status] || 0) + 1;
    assert.deepEqual(statuses, { 200: CLIENTS });
    assert.ok(clients.every((c) => /^text\/event-stream/.test(c.headers["content-type"])));

    // Each instance holds a share of the connections.
    const conns = async () => Promise.all(hs.map(async (h) => (await getJson(h.url, "/healthz")).json.connections));
    let shares;
    await waitUntil(
      async () => {
        shares = await conns();
        return shares.reduce((a, b) => a + b, 0) >= CLIENTS;
      },
      { timeoutMs: 5000, what: `${CLIENTS} connections over the instances` },
    ).catch((err) => {
      throw new Error(`${err.message}; have ${shares}`);
    });
    t.diagnostic(`opened ${CLIENTS} SSE clients in ${openMs} ms; connections per instance ${shares.join("/")}`);
    for (const [i, n] of shares.entries()) assert.ok(n > 200, `instance ${i} has ${n} connections (${shares})`);

    // Every instance watches the channel, and every stream is subscribed: its
    // first event, herald.cursor, comes once the channel answered (docs/protocol.md).
    await waitUntil(async () => (await numsub(redis.port, `herald:{${LB}}:pub`)) === 3, {
      timeoutMs: 5000,
      what: "3 instances watching stream:lb",
    });
    await waitUntil(() => clients.every((c) => c.ended || c.events.some((e) => e.event === "herald.cursor")), {
      timeoutMs: 10_000,
      what: "a herald.cursor event at every client",
    }).catch((err) => {
      throw new Error(`${err.message}: ${clients.filter((c) => !c.events.length).length} of ${CLIENTS} have none`);
    });
    assert.ok(clients.every((c) => !c.ended), "a client was cut off");

    const sentAt = Date.now();
    const offsets = await publishOk(hs[1].url, { channel: LB, event: "lb", data: { hello: "all" } });
    assert.equal(offsets[LB], 1);
    try {
      await waitUntil(() => clients.every((c) => c.lbAt !== null), {
        timeoutMs: 5000,
        intervalMs: 20,
        what: "the publication at every client",
      });
    } catch (err) {
      const missing = clients.filter((c) => c.lbAt === null).length;
      throw new Error(`${err.message}: ${missing} of ${CLIENTS} did not get it`);
    }
    const lat = clients.map((c) => c.lbAt - sentAt).sort((a, b) => a - b);
    t.diagnostic(`delivery latency: median ${lat[lat.length >> 1]} ms, max ${lat.at(-1)} ms`);
    for (const c of clients) {
      const lbEvents = c.events.filter((e) => e.event === "lb");
      assert.equal(lbEvents.length, 1);
      assert.equal(lbEvents[0].data, '{"hello":"all"}');
      assert.match(lbEvents[0].id, /^[0-9a-f]{8}-[a-z0-9]{1,32}-1$/);
    }

    // Close them all: the instances see the connections go.
    const closedAt = Date.now();
    for (const c of clients) c.req.destroy();
    await waitUntil(
      async () => {
        shares = await conns();
        return shares.every((n) => n <= 5);
      },
      { timeoutMs: 5 * HEARTBEAT * 1000, intervalMs: 100, what: "connections closed on the instances" },
    ).catch((err) => {
      throw new Error(`${err.message}; have ${shares}`);
    });
    drainMs = Date.now() - closedAt;
    t.diagnostic(`instances saw the clients go after ${drainMs} ms (SSE heartbeat ${HEARTBEAT} s)`);
  });

  test(
    "client aborts through HAProxy reach the instances promptly (< 1 s)",
    {},
    () => {
      assert.ok(drainMs !== null, "the previous test did not get that far");
      assert.ok(drainMs < 1000, `instances saw the clients go after ${drainMs} ms`);
    },
  );
});
