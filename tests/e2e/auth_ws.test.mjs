// Authentication over WebSocket (docs/auth.md), against a real herald with
// real keys: Bearer on the upgrade, {"op":"connect"} after it and its
// deadline, Origin checks, forbidden channels (the connection keeps its
// others), the refresh flow and the close when a token expires unrefreshed.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { accountId, awaitBackgroundStops, probeUntilDelivered, sleep, suiteHerald, withHerald } from "./lib/herald.mjs";
import { hsSetup, nowS, signJwt } from "./lib/tokens.mjs";
import { publicationsOf, wsConnect } from "./lib/ws.mjs";

const alice = accountId(111);
const bob = accountId(222);

after(awaitBackgroundStops);

describe("WebSocket authentication", () => {
  const s = hsSetup();
  const h = suiteHerald(
    [...s.args, "--ws-auth-timeout=1", "--token-refresh-grace=1", "--jwt-leeway=0", "--allowed-origins=https://app.example"],
    { insecure: false },
  );
  const send = async (url, body) => {
    const res = await fetch(`${url}/v1/publish`, {
      method: "POST",
      headers: { "content-type": "application/json", ...s.auth },
      body: JSON.stringify(body),
    });
    if (res.status !== 200) throw new Error(`publish: ${res.status} ${await res.text()}`);
    return (await res.json()).offsets;
  };

  /** Publishes probes to `channel` until `client` gets one. */
  const stillReceives = (client, channel) =>
    probeUntilDelivered(h.url, client.inbox, [channel], {
      send,
      isProbe: (m, tag) => m.op === "publication" && m.channel === channel && m.data?.probe === tag,
    });

  const bearer = (token) => ({ options: { headers: { authorization: `Bearer ${token}` } } });

  test("Bearer on the upgrade: own channel delivers, another user's is forbidden, the rest keeps going", async () => {
    const c = await wsConnect(h.url, bearer(s.token({ sub: alice })));
    try {
      const ok = await c.request({ op: "subscribe", channel: `user:${alice}` });
      assert.equal(ok.op, "subscribed");
      const no = await c.request({ op: "subscribe", channel: `user:${bob}` });
      assert.equal(no.op, "error");
      assert.equal(no.code, "forbidden");
      assert.equal(no.channel, `user:${bob}`);
      await send(h.url, { channel: `user:${alice}`, event: "paid", data: { n: 1 } });
      await c.inbox.until((items) => publicationsOf({ inbox: { items } }, `user:${alice}`).some((m) => m.event === "paid"));
      await stillReceives(c, `user:${alice}`);
      await send(h.url, { channel: `user:${bob}`, event: "secret", data: 1 });
      // A positive marker first: a later publication on alice's channel arrived.
      await stillReceives(c, `user:${alice}`);
      assert.equal(publicationsOf(c, `user:${bob}`).length, 0);
    } finally {
      await c.close();
    }
  });

  test("a bad Bearer token refuses the upgrade with 401", async () => {
    for (const token of [
      s.token({ sub: alice, exp: nowS() - 10 }),
      signJwt({ sub: alice, exp: nowS() + 60 }, { alg: "none" }),
      "x.y.z",
      // RFC 7515 section 4.1.11 (was: accepted).
      signJwt({ sub: alice, exp: nowS() + 60 }, { alg: "HS256", key: s.secret, header: { crit: ["foo"], foo: 1 } }),
    ])
      await assert.rejects(wsConnect(h.url, bearer(token)), /upgrade refused: 401/);
  });

  test("Origin: unlisted browser origins get 403, listed ones and non-browsers are let in", async () => {
    await assert.rejects(wsConnect(h.url, { options: { origin: "https://evil.example" } }), /upgrade refused: 403/);
    const listed = await wsConnect(h.url, { options: { origin: "https://app.example" } });
    await listed.close();
    const self = await wsConnect(h.url, { options: { origin: h.url } }); // the server's own pages
    await self.close();
    const none = await wsConnect(h.url);
    await none.close();
  });

  test("connect op: subscribe before it is unauthorized; after it, own channels only (and the channels claim)", async () => {
    const c = await wsConnect(h.url);
    try {
      const early = await c.request({ op: "subscribe", channel: "stream:1" });
      assert.equal(early.code, "unauthorized");
      const token = s.token({ sub: alice, channels: [`user:${alice}`, "stream:ok-*"] });
      const hello = await c.request({ op: "connect", token });
      assert.equal(hello.op, "connected");
      assert.equal(hello.sub, alice);
      assert.equal(typeof hello.expires_at, "number");
      assert.equal((await c.request({ op: "subscribe", channel: `user:${alice}` })).op, "subscribed");
      assert.equal((await c.request({ op: "subscribe", channel: "stream:ok-1" })).op, "subscribed");
      assert.equal((await c.request({ op: "subscribe", channel: `user:${bob}` })).code, "forbidden");
      assert.equal((await c.request({ op: "subscribe", channel: "stream:other" })).code, "forbidden");
      assert.equal((await c.request({ op: "connect", token })).code, "invalid_request");
      await stillReceives(c, "stream:ok-1");
    } finally {
      await c.close();
    }
  });

  test("connect with a bad token closes with 4001 and the reason", async () => {
    for (const [token, reason] of [
      [s.token({ sub: alice, exp: nowS() - 10 }), "token expired"],
      [signJwt({ sub: alice, exp: nowS() + 60 }, { alg: "none" }), "token algorithm not accepted"],
      [signJwt({ sub: alice, exp: nowS() + 60 }, { alg: "HS256", key: "another-secret-of-enough-length-0123456789" }), "token signature invalid"],
      // RFC 7515 section 4.1.11: a validly signed token with crit (was: connected).
      [
        signJwt({ sub: alice, exp: nowS() + 60 }, { alg: "HS256", key: s.secret, header: { crit: ["foo"], foo: 1 } }),
        "token header has crit (extensions Herald does not understand)",
      ],
    ]) {
      const c = await wsConnect(h.url);
      c.send({ op: "connect", token });
      assert.deepEqual(await c.closed, { code: 4001, reason });
    }
  });

  test("no connect within --ws-auth-timeout closes with 4001; other clients keep receiving", async () => {
    const watcher = await wsConnect(h.url, bearer(s.token({ sub: bob })));
    try {
      assert.equal((await watcher.request({ op: "subscribe", channel: "stream:w" })).op, "subscribed");
      const idle = await wsConnect(h.url);
      const started = Date.now();
      const closed = await idle.closed;
      assert.equal(closed.code, 4001);
      assert.match(closed.reason, /authentication timeout/);
      assert.ok(Date.now() - started >= 800, "not before the timeout");
      await stillReceives(watcher, "stream:w");
    } finally {
      await watcher.close();
    }
  });

  test("expiry: refresh_required before exp, refresh keeps the connection, a wrong refresh does not", async () => {
    const c = await wsConnect(h.url, bearer(s.token({ sub: alice, exp: nowS() + 2 })));
    try {
      assert.equal((await c.request({ op: "subscribe", channel: `user:${alice}` })).op, "subscribed");
      assert.equal((await c.request({ op: "subscribe", channel: "stream:r" })).op, "subscribed");
      const ask = await c.inbox.until((items) => items.find((m) => m.op === "refresh_required"), { timeoutMs: 4000 });
      assert.equal(typeof ask.expires_at, "number");
      // Another sub, a bad token: refused, the connection stays.
      assert.equal((await c.request({ op: "refresh", token: s.token({ sub: bob }) })).code, "forbidden");
      assert.equal((await c.request({ op: "refresh", token: "x.y.z" })).code, "unauthorized");
      // A good refresh that narrows the channels: stream:r is dropped.
      const fresh = s.token({ sub: alice, channels: [`user:${alice}`] });
      const from = c.inbox.items.length;
      const ok = await c.request({ op: "refresh", token: fresh });
      assert.equal(ok.op, "refreshed");
      assert.ok(ok.expires_at > nowS() + 200);
      const dropped = c.inbox.items.slice(from).find((m) => m.op === "error" && m.channel === "stream:r");
      assert.equal(dropped?.code, "forbidden");
      await sleep(2500); // past the first token's exp
      assert.equal(c.ws.readyState, 1, "still open after the old exp");
      await stillReceives(c, `user:${alice}`);
    } finally {
      await c.close();
    }
  });

  // Found by a tester: an exp centuries away overflowed the expiry timers and
  // closed the connection at once; past year 9999 the token is malformed.
  test("an exp 300 years away keeps the connection; one past year 9999 is refused", async () => {
    const far = nowS() + 300 * 365 * 86400;
    const c = await wsConnect(h.url, bearer(s.token({ sub: alice, exp: far })));
    try {
      assert.equal((await c.request({ op: "subscribe", channel: `user:${alice}` })).op, "subscribed");
      await sleep(1500);
      assert.equal(c.ws.readyState, 1, "still open");
      assert.ok(!c.inbox.items.some((m) => m.op === "refresh_required"), "no refresh asked");
      await stillReceives(c, `user:${alice}`);
    } finally {
      await c.close();
    }
    const d = await wsConnect(h.url);
    d.send({ op: "connect", token: s.token({ sub: alice, exp: 253402300800 }) });
    const closed = await d.closed;
    assert.equal(closed.code, 4001);
  });

  test("expiry without refresh closes with 4002; another client keeps receiving", async () => {
    const watcher = await wsConnect(h.url, bearer(s.token({ sub: bob })));
    try {
      assert.equal((await watcher.request({ op: "subscribe", channel: "stream:x" })).op, "subscribed");
      const exp = nowS() + 2;
      const c = await wsConnect(h.url);
      assert.equal((await c.request({ op: "connect", token: s.token({ sub: alice, exp }) })).op, "connected");
      assert.equal((await c.request({ op: "subscribe", channel: "stream:x" })).op, "subscribed");
      await c.inbox.until((items) => items.some((m) => m.op === "refresh_required"), { timeoutMs: 4000 });
      const closed = await c.closed;
      assert.deepEqual(closed, { code: 4002, reason: "token expired" });
      assert.ok(Date.now() / 1000 >= exp - 0.5, "not before exp");
      await stillReceives(watcher, "stream:x");
    } finally {
      await watcher.close();
    }
  });
});

describe("WebSocket with --anonymous-streams", () => {
  test("streams without connect, no timeout; user channels need a token", async () => {
    const s = hsSetup();
    await withHerald([...s.args, "--anonymous-streams", "--ws-auth-timeout=1"], { insecure: false }, async (h) => {
      const c = await wsConnect(h.url);
      assert.equal((await c.request({ op: "subscribe", channel: "stream:open" })).op, "subscribed");
      assert.equal((await c.request({ op: "subscribe", channel: `user:${alice}` })).code, "unauthorized");
      await sleep(1500);
      assert.equal(c.ws.readyState, 1, "no connect deadline for anonymous stream readers");
      assert.equal((await c.request({ op: "connect", token: s.token({ sub: alice }) })).op, "connected");
      assert.equal((await c.request({ op: "subscribe", channel: `user:${alice}` })).op, "subscribed");
      await c.close();
    });
  });
});
