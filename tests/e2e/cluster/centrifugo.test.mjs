// Cluster mode behind HAProxy with the real `centrifuge` SDK: Redis, three
// herald instances, HAProxy (docker/haproxy.cfg). The SDK connects through
// HAProxy to /connection/websocket and subscribes; publications go through
// Centrifugo's /api/publish on another instance. The instance the SDK is on
// is SIGKILLed while publishing continues: the SDK reconnects through HAProxy
// to another instance, its `subscribed` event says recovered (Redis holds the
// history and the epoch for every instance), and every publication arrives
// once, in order. See docs/centrifugo.md and docs/cluster.md.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Centrifuge } from "centrifuge";
import WebSocket from "ws";

import { getJson } from "../lib/herald.mjs";
import { killHerald, sleep, startCluster, startHaproxy, startRedis, waitUntil } from "./lib.mjs";

const CHANNEL = "stream:cf-cluster";

async function apiPublish(h, n) {
  const res = await fetch(`${h.url}/api/publish`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ channel: CHANNEL, data: { n }, tags: { event: "n" } }),
  });
  const body = await res.json();
  if (res.status !== 200 || !body.result) throw new Error(`/api/publish: ${res.status} ${JSON.stringify(body)}`);
  return body.result;
}

describe("centrifuge SDK through HAProxy, losing its instance", { timeout: 90_000 }, () => {
  let redis;
  let hs = [];
  let lb;

  before(async () => {
    redis = await startRedis();
    hs = await startCluster(redis.url, 3, { via: "flag" });
    lb = await startHaproxy(hs.map((h) => `127.0.0.1:${h.port}`));
  }, { timeout: 45_000 });

  after(async () => {
    await lb?.stop();
    await Promise.all(hs.map((h) => h.stop()));
    await redis?.kill("SIGKILL");
  }, { timeout: 20_000 });

  test("the SDK reconnects elsewhere and recovers every missed publication once, in order", async () => {
    const c = new Centrifuge(`${lb.url.replace("http", "ws")}/connection/websocket`, {
      websocket: WebSocket,
      minReconnectDelay: 100,
      maxReconnectDelay: 500,
      timeout: 3000,
    });
    const sub = c.newSubscription(CHANNEL);
    const pubs = [];
    const subscribed = [];
    sub.on("publication", (ctx) => pubs.push(ctx));
    sub.on("subscribed", (ctx) => subscribed.push(ctx));
    sub.subscribe();
    c.connect();
    try {
      await waitUntil(() => subscribed.length === 1, { what: "subscribed", timeoutMs: 8000 });
      // The instance the SDK is on: the one with a client.
      const counts = await Promise.all(hs.map(async (h) => (await getJson(h.url, "/healthz")).json.connections));
      const a = counts.indexOf(1);
      assert.ok(a >= 0, `one instance holds the SDK: ${counts}`);
      const others = hs.filter((_, i) => i !== a);
      let n = 0;
      for (; n < 5; ) {
        n++;
        const r = await apiPublish(others[n % 2], n);
        assert.equal(r.offset, n);
      }
      await waitUntil(() => pubs.length === 5, { what: "5 publications", timeoutMs: 8000 });

      await killHerald(hs[a]);
      // Published while the SDK is away (HAProxy needs up to 2 s to see the loss).
      for (let i = 0; i < 10; i++) {
        n++;
        await apiPublish(others[n % 2], n);
        await sleep(100);
      }
      await waitUntil(() => subscribed.length === 2, { what: "subscribed again", timeoutMs: 15_000 });
      assert.equal(subscribed[1].wasRecovering, true);
      assert.equal(subscribed[1].recovered, true, JSON.stringify(subscribed[1]));
      for (let i = 0; i < 5; i++) {
        n++;
        await apiPublish(others[n % 2], n);
      }
      await waitUntil(() => pubs.length >= 20, { what: "20 publications", timeoutMs: 8000 });
      await sleep(200);
      assert.deepEqual(pubs.map((p) => p.data.n), [...Array(20).keys()].map((i) => i + 1));
      assert.deepEqual(pubs.map((p) => p.offset), [...Array(20).keys()].map((i) => i + 1));
    } finally {
      c.disconnect();
    }
  });
});
