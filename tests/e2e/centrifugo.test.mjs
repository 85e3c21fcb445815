// The real `centrifuge` SDK (npm, pinned in package.json; `ws` as its
// WebSocket) against Herald's /connection/websocket, in both of its builds:
// the default one (Centrifugo's JSON protocol) and `centrifuge/build/protobuf`
// (the Protobuf protocol, subprotocol `centrifuge-protobuf`). Each SDK
// scenario runs once per encoding: connect with a token, subscribe,
// publications once and in order, refused channels and tokens, token refresh
// and expiry, recovery after a dropped connection, trimmed history, the
// getState flow (flag bit 2 -> error 112), slow clients (3008), shutdown
// (3001), the application ping and 104. A JSON client and a Protobuf client on
// one channel receive the same publications. JSON only (hand-written JSON
// commands on a raw socket): duplicate keys (107), one reply per command id,
// the rate limit counted per command of a message; and the API key headers
// of /api. The Protobuf protocol on a raw socket (malformed input, limits) is
// in centrifugo_protobuf.test.mjs. docs/centrifugo.md is the contract.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { Centrifuge } from "centrifuge";
import { Centrifuge as CentrifugeProtobuf } from "centrifuge/build/protobuf";

import {
  accountId,
  awaitBackgroundStops,
  getJson,
  publish,
  publishOk,
  securedSuiteHerald,
  sleep,
  startHerald,
  stopInBackground,
  suiteHerald,
  waitUntil,
  withHerald,
} from "./lib/herald.mjs";
import {
  api,
  apiRaw,
  assertBurstAnswered,
  closeAsSlow,
  COMMANDS_BURST as BURST,
  COMMANDS_LIMIT_ARGS,
  ENCODINGS,
  rawCentrifugo,
  resubscribed,
  sdkClient,
  subscribedClient,
  subscription,
  withProxiedSubscriber,
} from "./lib/centrifuge.mjs";
import { startProxy } from "./lib/proxy.mjs";
import { nowS, signJwt } from "./lib/tokens.mjs";

const ALICE = accountId(1);
const BOB = accountId(2);

after(awaitBackgroundStops);

/** What the app passes as command data (rpc, publish): a JSON value, or its bytes for the Protobuf build. */
const commandData = (enc, value) => (enc === "protobuf" ? new TextEncoder().encode(JSON.stringify(value)) : value);

const waitFor = (fn, what, timeoutMs = 5000) => waitUntil(fn, { what, timeoutMs });
const lastEvent = (x, name) => [...x.events].reverse().find((e) => e.name === name);

for (const [enc, Sdk] of ENCODINGS) {
  const client = (port, opts) => sdkClient(Sdk, port, opts);

  describe(`centrifuge SDK (${enc}): connect, subscribe, publications, tokens`, () => {
    const { h, auth } = securedSuiteHerald(["--ws-ping-interval=1", "--ws-pong-timeout=1", "--jwt-leeway=0", "--token-refresh-grace=1"]);

    test("a token connects; stream: and user: publications arrive once and in order", async () => {
      const c = client(h.port, { token: auth.token({ sub: ALICE }) });
      const stream = subscription(c, "stream:cf-order");
      const mine = subscription(c, `user:${ALICE}`);
      stream.subscribe();
      mine.subscribe();
      c.connect();
      try {
        await waitFor(() => stream.state === "subscribed" && mine.state === "subscribed", "subscribed");
        const connected = lastEvent(c, "connected");
        assert.match(connected.ctx.client, /^[0-9a-f-]{36}$/);
        // Odd publications through Herald's /v1/publish, even ones through
        // Centrifugo's /api/publish: one sequence either way.
        for (let i = 1; i <= 20; i++) {
          if (i % 2) {
            await publishOk(h.url, { channel: "stream:cf-order", event: "tick", data: { i } }, { headers: auth.auth });
            await publishOk(h.url, { channel: `user:${ALICE}`, event: "credited", data: { i } }, { headers: auth.auth });
          } else {
            await api(h.url, "publish", { channel: "stream:cf-order", data: { i }, tags: { event: "tick" } }, auth.apiKey);
            await api(h.url, "publish", { channel: `user:${ALICE}`, data: { i }, tags: { event: "credited" } }, auth.apiKey);
          }
        }
        await waitFor(() => stream.pubs.length >= 20 && mine.pubs.length >= 20, "40 publications");
        await sleep(100);
        assert.deepEqual(stream.pubs.map((p) => p.data.i), [...Array(20).keys()].map((i) => i + 1));
        assert.deepEqual(mine.pubs.map((p) => p.data.i), [...Array(20).keys()].map((i) => i + 1));
        assert.deepEqual(stream.pubs[0].tags, { event: "tick" });
        assert.equal(mine.pubs[0].tags.event, "credited");
        const offsets = stream.pubs.map((p) => p.offset);
        assert.deepEqual(offsets, [...offsets].sort((a, b) => a - b));
        assert.equal(new Set(offsets).size, 20);
        // The JSON build parses the data; the Protobuf build hands over the
        // bytes of Publication.data: the publication's JSON text, unchanged.
        for (const p of [...stream.pubs, ...mine.pubs]) {
          if (enc === "protobuf") {
            assert.ok(p.raw instanceof Uint8Array, `Publication.data is bytes, got ${typeof p.raw}`);
            assert.equal(new TextDecoder().decode(p.raw), JSON.stringify({ i: p.data.i }));
          } else {
            assert.ok(!(p.raw instanceof Uint8Array));
          }
        }
      } finally {
        c.disconnect();
      }
    });

    test("another account's user: channel is refused with 103; the connection stays", async () => {
      const c = client(h.port, { token: auth.token({ sub: ALICE }) });
      const theirs = subscription(c, `user:${BOB}`);
      const ok = subscription(c, "stream:cf-refused");
      theirs.subscribe();
      ok.subscribe();
      c.connect();
      try {
        await waitFor(() => theirs.state === "unsubscribed" && ok.state === "subscribed", "refusal");
        const err = lastEvent(theirs, "error") ?? lastEvent(theirs, "unsubscribed");
        assert.equal(err.ctx.error?.code ?? err.ctx.code, 103);
        assert.equal(c.state, "connected");
      } finally {
        c.disconnect();
      }
    });

    test("a bad token stops the SDK (3500, no endless retry)", async () => {
      for (const token of [
        auth.token({ sub: ALICE }).slice(0, -4) + "AAAA",
        // A validly signed token whose header has crit (RFC 7515 section 4.1.11; was: connected).
        signJwt({ sub: ALICE, exp: nowS() + 300 }, { alg: "HS256", key: auth.secret, header: { crit: ["foo"], foo: 1 } }),
      ]) {
        const c = client(h.port, { token });
        c.connect();
        try {
          await waitFor(() => c.state === "disconnected", "disconnected");
          const d = lastEvent(c, "disconnected");
          assert.equal(d.ctx.code, 3500, JSON.stringify(d.ctx));
          await sleep(500);
          assert.equal(c.state, "disconnected");
          assert.equal(c.events.filter((e) => e.name === "connecting").length, 1, "no reconnect attempts");
        } finally {
          c.disconnect();
        }
      }
    });

    test("an expiring token is refreshed through getToken; the connection outlives it", async () => {
      let calls = 0;
      const c = client(h.port, {
        token: auth.token({ sub: ALICE, exp: nowS() + 3 }),
        getToken: async () => {
          calls++;
          return auth.token({ sub: ALICE, exp: nowS() + 3 });
        },
      });
      const sub = subscription(c, "stream:cf-refresh");
      sub.subscribe();
      c.connect();
      try {
        await waitFor(() => sub.state === "subscribed", "subscribed");
        const client = lastEvent(c, "connected").ctx.client;
        await sleep(5000); // past the first token's exp
        assert.ok(calls >= 1, "getToken was called");
        assert.equal(c.state, "connected");
        assert.equal(c.events.filter((e) => e.name === "connected").length, 1, "never reconnected");
        assert.equal(lastEvent(c, "connected").ctx.client, client);
        await publishOk(h.url, { channel: "stream:cf-refresh", event: "e", data: { after: "refresh" } }, { headers: auth.auth });
        await waitFor(() => sub.pubs.length === 1, "publication after refresh");
      } finally {
        c.disconnect();
      }
    });

    test("a token that is not refreshed ends the connection with 3005", async () => {
      // getToken never answers: the SDK cannot refresh, Herald closes at exp.
      const c = client(h.port, { token: auth.token({ sub: ALICE, exp: nowS() + 2 }), getToken: () => new Promise(() => {}) });
      c.connect();
      try {
        await waitFor(() => c.events.some((e) => e.name === "connecting" && e.ctx.code === 3005), "3005", 6000);
      } finally {
        c.disconnect();
      }
    });

    test("an idle connection stays open past several ping intervals ({} pings)", async () => {
      // The SDK disconnects when no ping came within ping (1 s) + 600 ms.
      const c = client(h.port, { token: auth.token({ sub: ALICE }), maxServerPingDelay: 600 });
      c.connect();
      try {
        await waitFor(() => c.state === "connected", "connected");
        await sleep(4500);
        assert.equal(c.state, "connected");
        assert.equal(c.events.filter((e) => e.name === "connecting").length, 1, JSON.stringify(c.events));
      } finally {
        c.disconnect();
      }
    });

    test("commands Herald does not offer are answered with 104", async () => {
      const c = client(h.port, { token: auth.token({ sub: ALICE }) });
      c.connect();
      try {
        await waitFor(() => c.state === "connected", "connected");
        await assert.rejects(c.rpc("method", commandData(enc, {})), (e) => e.code === 104);
        await assert.rejects(c.presence("stream:x"), (e) => e.code === 104);
        await assert.rejects(c.presenceStats("stream:x"), (e) => e.code === 104);
        await assert.rejects(c.history("stream:x", { limit: 1 }), (e) => e.code === 104);
        await assert.rejects(c.publish("stream:x", commandData(enc, { a: 1 })), (e) => e.code === 104);
        assert.equal(c.state, "connected");
      } finally {
        c.disconnect();
      }
    });
  });
}

describe("centrifuge SDK: a JSON client and a Protobuf client on one channel", () => {
  const { h, auth } = securedSuiteHerald();

  test("both receive the same publications (data, event, offsets, in order) from /api/publish and /v1/publish", async () => {
    const channel = "stream:cf-mixed";
    const { c: json, sub: jsonSub } = subscribedClient(Centrifuge, h.port, channel, {}, { token: auth.token({ sub: ALICE }) });
    const { c: proto, sub: protoSub } = subscribedClient(CentrifugeProtobuf, h.port, channel, {}, { token: auth.token({ sub: BOB }) });
    try {
      await waitFor(() => jsonSub.state === "subscribed" && protoSub.state === "subscribed", "both subscribed");
      // Data that must survive as it is: nested values, numbers, non-ASCII text
      // (2-, 3- and 4-byte UTF-8), escapes, an empty object and array.
      const sent = [];
      for (let i = 1; i <= 12; i++) {
        const data = {
          i,
          amount: `${i}.5000000`,
          memo: ["caf\u00e9", "\u20ac 10", "\ud83d\ude80", 'quote " backslash \\ tab \t'][i % 4],
          nested: { list: [i, -i, 1.5, true, false, null], empty: {}, none: [] },
        };
        sent.push(data);
        if (i % 2) await api(h.url, "publish", { channel, data, tags: { event: "api" } }, auth.apiKey);
        else await publishOk(h.url, { channel, event: "v1", data }, { headers: auth.auth });
      }
      await waitFor(() => jsonSub.pubs.length >= 12 && protoSub.pubs.length >= 12, "12 publications on each client");
      await sleep(100); // nothing more (no duplicate) after the last one
      for (const [name, sub] of [["json", jsonSub], ["protobuf", protoSub]]) {
        assert.equal(sub.pubs.length, 12, `${name}: each publication once`);
        assert.deepEqual(sub.pubs.map((p) => p.data), sent, `${name}: data`);
        assert.deepEqual(sub.pubs.map((p) => p.offset), [...Array(12).keys()].map((i) => i + 1), `${name}: offsets`);
        assert.deepEqual(sub.pubs.map((p) => p.tags.event), sent.map((d) => (d.i % 2 ? "api" : "v1")), `${name}: tags`);
      }
      // Publication.data holds the same JSON text the JSON client parsed.
      for (let k = 0; k < 12; k++) {
        assert.ok(protoSub.pubs[k].raw instanceof Uint8Array);
        assert.equal(new TextDecoder().decode(protoSub.pubs[k].raw), JSON.stringify(jsonSub.pubs[k].raw));
      }
    } finally {
      json.disconnect();
      proto.disconnect();
    }
  });

  test("both recover the same missed publications after their connections drop", async () => {
    const channel = "stream:cf-mixed-recover";
    const proxy = await startProxy(h.port);
    const { c: json, sub: jsonSub } = subscribedClient(Centrifuge, proxy.port, channel, {}, { token: auth.token({ sub: ALICE }) });
    const { c: proto, sub: protoSub } = subscribedClient(CentrifugeProtobuf, proxy.port, channel, {}, { token: auth.token({ sub: ALICE }) });
    try {
      await waitFor(() => jsonSub.state === "subscribed" && protoSub.state === "subscribed", "both subscribed");
      await publishOk(h.url, { channel, event: "e", data: { n: 1 } }, { headers: auth.auth });
      await waitFor(() => jsonSub.pubs.length === 1 && protoSub.pubs.length === 1, "the first publication");
      // Both lose their connections; what is published meanwhile comes back
      // inside their resubscribe replies.
      proxy.drop();
      for (let n = 2; n <= 6; n++) {
        if (n % 2) await api(h.url, "publish", { channel, data: { n }, tags: { event: "e" } }, auth.apiKey);
        else await publishOk(h.url, { channel, event: "e", data: { n } }, { headers: auth.auth });
      }
      await waitFor(() => jsonSub.pubs.length >= 6 && protoSub.pubs.length >= 6, "6 publications on each client", 8000);
      await publishOk(h.url, { channel, event: "e", data: { n: 7 } }, { headers: auth.auth });
      await waitFor(() => jsonSub.pubs.length >= 7 && protoSub.pubs.length >= 7, "the live publication after the recovery");
      for (const [name, sub] of [["json", jsonSub], ["protobuf", protoSub]]) {
        assert.deepEqual(sub.pubs.map((p) => [p.offset, p.data.n]), [...Array(7).keys()].map((i) => [i + 1, i + 1]), name);
        const subscribed = sub.events.filter((e) => e.name === "subscribed");
        assert.equal(subscribed.length, 2, `${name}: subscribed again after the drop`);
        assert.equal(subscribed[1].ctx.recovered, true, name);
      }
    } finally {
      json.disconnect();
      proto.disconnect();
      await proxy.close();
    }
  });
});

describe("Centrifugo JSON protocol on a raw socket: malformed commands, one reply per id", () => {
  const { h, auth } = securedSuiteHerald();

  test("a malformed command with a readable id is answered 107 and the connection stays open", async () => {
    const c = await rawCentrifugo(h.port);
    const { ws, replies } = c;
    try {
      ws.send(JSON.stringify({ id: 1, connect: { token: auth.token({ sub: ALICE }) } }));
      await waitFor(() => replies.some((r) => r.id === 1), "connect reply");
      // Duplicate keys (refused, never "last one wins"), in the method's body and as the method.
      ws.send('{"id":2,"subscribe":{"channel":"stream:cf-dup1","channel":"stream:cf-dup2"}}');
      ws.send('{"id":3,"ping":{},"ping":{}}');
      ws.send(JSON.stringify({ id: 4, subscribe: { channel: "stream:cf-dup-ok" } }));
      await waitFor(() => replies.some((r) => r.id === 4), "subscribe reply");
      for (const id of [2, 3]) {
        const r = replies.find((x) => x.id === id);
        assert.equal(r?.error?.code, 107, JSON.stringify(replies));
        assert.match(r.error.message, /duplicate key/);
      }
      assert.ok(replies.find((x) => x.id === 4).subscribe, JSON.stringify(replies));
      assert.equal(c.closed, null);
    } finally {
      ws.close();
    }
  });

  test("every command id is answered once: a second subscribe to a channel before the first one's reply", async () => {
    // Raw `ws`, as a tester sent it: two subscribes to one channel in one
    // message (after the connect reply, or with the connect). Each id gets
    // one reply: the superseded subscribe error 107, the later one the
    // subscription (docs/centrifugo.md, Codes). The first id used to get none.
    const open = () => rawCentrifugo(h.port);
    const token = auth.token({ sub: ALICE });
    const connect = JSON.stringify({ id: 1, connect: { token } });
    const pair = '{"id":2,"subscribe":{"channel":"stream:q"}}\n{"id":3,"subscribe":{"channel":"stream:q"}}';
    const answered = (c, ids) => ids.every((id) => c.replies.some((r) => r.id === id));
    const checkOnce = (c, ids) => {
      const seen = c.replies.filter((r) => r.id !== undefined).map((r) => r.id);
      assert.deepEqual(seen, ids, JSON.stringify(c.replies));
      // Superseded while pending: 107. The channel may also have answered it
      // before the second subscribe reached the session: a subscribe reply then.
      const first = c.replies.find((r) => r.id === 2);
      if (!first.subscribe) {
        assert.equal(first.error?.code, 107, JSON.stringify(c.replies));
        assert.match(first.error.message, /superseded/);
      }
      assert.ok(c.replies.find((r) => r.id === 3).subscribe, JSON.stringify(c.replies));
      assert.equal(c.closed, null);
    };
    // The race was lost 11 times in 12: repeat it.
    for (let round = 0; round < 12; round++) {
      const together = round % 2 === 1;
      const c = await open();
      try {
        if (together) {
          c.ws.send(`${connect}\n${pair}`);
        } else {
          c.ws.send(connect);
          await waitFor(() => answered(c, [1]), "connect reply");
          c.ws.send(pair);
        }
        await waitFor(() => answered(c, [1, 2, 3]), `replies to ids 1, 2 and 3 (round ${round})`);
        await sleep(50); // nothing more (no second reply to one id)
        checkOnce(c, [1, 2, 3]);
      } finally {
        c.ws.close();
      }
    }
    // More interleavings on one connection: subscribe then unsubscribe before
    // the reply; subscribe, subscribe, unsubscribe; a refresh and a second
    // connect among them. The subscription left is the last one asked for.
    const c = await open();
    try {
      c.ws.send(connect);
      await waitFor(() => answered(c, [1]), "connect reply");
      const lines = [
        { id: 2, subscribe: { channel: "stream:cf-race-a" } },
        { id: 3, unsubscribe: { channel: "stream:cf-race-a" } },
        { id: 4, subscribe: { channel: "stream:cf-race-b" } },
        { id: 5, refresh: { token } },
        { id: 6, subscribe: { channel: "stream:cf-race-b" } },
        { id: 7, unsubscribe: { channel: "stream:cf-race-b" } },
        { id: 8, connect: { token } },
        { id: 9, subscribe: { channel: "stream:cf-race-c" } },
        { id: 10, subscribe: { channel: "stream:cf-race-c" } },
      ];
      c.ws.send(lines.map((l) => JSON.stringify(l)).join("\n"));
      const ids = lines.map((l) => l.id);
      await waitFor(() => answered(c, ids), "a reply to every id");
      await publishOk(h.url, { channel: "stream:cf-race-a", event: "e", data: {} }, { headers: auth.auth });
      await publishOk(h.url, { channel: "stream:cf-race-b", event: "e", data: {} }, { headers: auth.auth });
      await publishOk(h.url, { channel: "stream:cf-race-c", event: "e", data: { last: true } }, { headers: auth.auth });
      await waitFor(() => c.replies.some((r) => r.push?.pub), "a publication");
      await sleep(50);
      // A superseded or cancelled subscribe is answered when the command that
      // ends it arrives, so ids are not in command order: each appears once.
      const seen = c.replies.filter((r) => r.id !== undefined).map((r) => r.id);
      assert.deepEqual(seen.sort((a, b) => a - b), [1, ...ids], JSON.stringify(c.replies));
      const byId = (id) => c.replies.find((r) => r.id === id);
      // Ended before its reply: 107; answered before the command that ends it: its reply.
      for (const id of [2, 4, 6, 9]) assert.ok(byId(id).error?.code === 107 || byId(id).subscribe, JSON.stringify(byId(id)));
      assert.equal(byId(8).error?.code, 107, JSON.stringify(byId(8))); // already connected
      for (const id of [3, 7]) assert.deepEqual(byId(id).unsubscribe, {});
      assert.ok(byId(5).refresh, JSON.stringify(byId(5)));
      assert.ok(byId(10).subscribe, JSON.stringify(byId(10)));
      const pubs = c.replies.filter((r) => r.push?.pub);
      assert.deepEqual(pubs.map((r) => r.push.channel), ["stream:cf-race-c"]);
      assert.equal(c.closed, null);
    } finally {
      c.ws.close();
    }
  });
});


describe("Centrifugo client protocol: commands per second", () => {
  const h = suiteHerald(COMMANDS_LIMIT_ARGS);

  test("one message of 150 commands past a burst of 100: the rest answered 111 by id, not run", async () => {
    const c = await rawCentrifugo(h.port);
    try {
      c.ws.send(JSON.stringify({ id: 1, connect: {} }));
      await waitFor(() => c.replies.some((r) => r.id === 1), "connect reply");
      assert.ok(c.replies.find((r) => r.id === 1).connect, JSON.stringify(c.replies));
      const ids = Array.from({ length: 150 }, (_, i) => i + 2);
      c.ws.send(ids.map((id) => JSON.stringify({ id, ping: {} })).join("\n"));
      await waitFor(() => ids.every((id) => c.replies.some((r) => r.id === id)), "a reply to every command");
      assertBurstAnswered(c.replies, ids, BURST);
      assert.equal(c.closed, null);
    } finally {
      c.ws.close();
    }
  });

  test("--ws-commands-burst commands refused in a row, in one message: 3501 rate limited", async () => {
    const c = await rawCentrifugo(h.port);
    c.ws.send(JSON.stringify({ id: 1, connect: {} }));
    await waitFor(() => c.replies.some((r) => r.id === 1), "connect reply");
    c.ws.send(Array.from({ length: 3 * BURST }, (_, i) => JSON.stringify({ id: i + 2, ping: {} })).join("\n"));
    await waitFor(() => c.closed, "the close");
    assert.deepEqual(c.closed, { code: 3501, reason: "bad request: rate limited" });
    assert.ok(c.replies.some((r) => r.error?.code === 111));
    assert.ok(c.replies.filter((r) => r.ping).length <= BURST + 1);
  });
});

describe("Centrifugo server API", () => {
  const { h, auth } = securedSuiteHerald();

  test("publish, broadcast, history and info answer Centrifugo's shapes", async () => {
    const first = await api(h.url, "publish", { channel: "stream:api-1", data: { n: 1 } }, auth.apiKey);
    assert.equal(first.offset, 1);
    assert.match(first.epoch, /^[a-z0-9]{1,32}$/);
    const second = await api(h.url, "publish", { channel: "stream:api-1", data: { n: 2 }, tags: { event: "e2" } }, auth.apiKey,
                             { header: "authorization" });
    assert.deepEqual(second, { offset: 2, epoch: first.epoch });
    const b = await api(h.url, "broadcast", { channels: ["stream:api-1", "stream:api-2"], data: { n: 3 } }, auth.apiKey);
    assert.equal(b.responses.length, 2);
    assert.deepEqual(b.responses[0].result, { offset: 3, epoch: first.epoch });
    assert.equal(b.responses[1].result.offset, 1);
    // limit 0: the position only; the same as GET /v1/channels/{name}.
    const pos = await api(h.url, "history", { channel: "stream:api-1", limit: 0 }, auth.apiKey);
    assert.deepEqual(pos, { publications: [], epoch: first.epoch, offset: 3 });
    const own = await getJson(h.url, "/v1/channels/stream:api-1", { headers: auth.auth });
    assert.deepEqual(own.json, { channel: "stream:api-1", epoch: first.epoch, offset: 3 });
    const hist = await api(h.url, "history", { channel: "stream:api-1", limit: 2 }, auth.apiKey);
    assert.deepEqual(hist.publications.map((p) => [p.offset, p.data.n, p.tags.event]), [[2, 2, "e2"], [3, 3, "publication"]]);
    const empty = await api(h.url, "history", { channel: "stream:api-never" }, auth.apiKey);
    assert.equal(empty.offset, 0);
    assert.match(empty.epoch, /^[a-z0-9]+$/);
    const info = await api(h.url, "info", {}, auth.apiKey);
    assert.equal(info.nodes.length, 1);
    assert.equal(typeof info.nodes[0].num_clients, "number");
  });

  test("refusals: API key, malformed body, bad channel, unsupported fields", async () => {
    const noKey = await apiRaw(h.url, "publish", { channel: "stream:x", data: {} });
    assert.equal(noKey.status, 401);
    assert.equal(noKey.json.error.code, 101);
    const badKey = await apiRaw(h.url, "publish", { channel: "stream:x", data: {} }, "nope");
    assert.equal(badKey.status, 401);
    const bearer = await apiRaw(h.url, "publish", { channel: "stream:x", data: {} }, auth.apiKey, { header: "bearer" });
    assert.equal(bearer.status, 401, "the server API reads X-API-Key or Authorization: apikey");
    // Was "the API key is not accepted" for the right key: say where /api reads it.
    assert.equal(bearer.json.error.code, 101);
    assert.equal(
      bearer.json.error.message,
      "the server API needs X-API-Key: <key> or Authorization: apikey <key> (Authorization: Bearer is read by /v1/publish)",
    );
    assert.match(badKey.json.error.message, /not accepted/);
    // And the other way round: /v1/publish reads Authorization: Bearer only.
    const apikeyOnPublish = await publish(h.url, { channel: "stream:x", event: "e", data: {} }, { headers: { authorization: `apikey ${auth.apiKey}` } });
    assert.equal(apikeyOnPublish.status, 401);
    assert.equal(apikeyOnPublish.json.error.message, "publishing needs Authorization: Bearer <API key>");
    const malformed = await apiRaw(h.url, "publish", "{", auth.apiKey);
    assert.equal(malformed.status, 400);
    assert.equal(malformed.json.error.code, 107);
    const channel = await apiRaw(h.url, "publish", { channel: "room:1", data: {} }, auth.apiKey);
    assert.equal(channel.status, 400);
    assert.equal(channel.json.error.code, 102);
    const b64 = await apiRaw(h.url, "publish", { channel: "stream:x", b64data: "AA==" }, auth.apiKey);
    assert.equal(b64.json.error.code, 107);
    const noKeyPos = await getJson(h.url, "/v1/channels/stream:x");
    assert.equal(noKeyPos.status, 401);
    const badName = await getJson(h.url, "/v1/channels/room:1", { headers: auth.auth });
    assert.equal(badName.status, 400);
    const tag = await apiRaw(h.url, "publish", { channel: "stream:x", data: {}, tags: { event: "e", n: 1 } }, auth.apiKey);
    assert.equal(tag.status, 400);
    assert.equal(tag.json.error.code, 107);
    assert.match(tag.json.error.message, /tags\.n/);
  });

  test("every refusal under /api is Centrifugo's shape with a numeric code, also before routing", async () => {
    const cases = [
      // A body over --max-publish-bytes (413), an unknown path (404), a method
      // the route does not take (405), a head over --max-header-bytes (431).
      [await apiRaw(h.url, "publish", JSON.stringify({ channel: "stream:x", data: "x".repeat(70_000) }), auth.apiKey), 413],
      [await apiRaw(h.url, "foo", {}, auth.apiKey), 404],
      [await getJson(h.url, "/api/publish"), 405],
      [await getJson(h.url, "/api/info", { headers: { "x-big": "y".repeat(10_000) } }), 431],
    ];
    for (const [r, status] of cases) {
      const what = `${status}: ${r.text ?? JSON.stringify(r.json)}`;
      assert.equal(r.status, status, what);
      assert.equal(typeof r.json.error.code, "number", what);
      assert.ok(r.json.error.message, what);
    }
    // Herald's own routes keep Herald's body.
    const own = await getJson(h.url, "/v1/nothing");
    assert.equal(own.json.error.code, "not_found");
  });

  test("broadcast: a channel listed twice is published twice, one response per entry in order", async () => {
    const b = await api(h.url, "broadcast", { channels: ["stream:bx", "stream:by", "stream:bx"], data: { n: 1 } }, auth.apiKey);
    assert.deepEqual(b.responses.map((r) => r.result.offset).sort(), [1, 1, 2]);
    assert.equal(b.responses[1].result.offset, 1, "stream:by");
    assert.deepEqual(new Set([b.responses[0].result.offset, b.responses[2].result.offset]), new Set([1, 2]));
    const hist = await api(h.url, "history", { channel: "stream:bx", limit: 10 }, auth.apiKey);
    assert.equal(hist.offset, 2);
  });
});

for (const [enc, Sdk] of ENCODINGS) {
  const client = (port, opts) => sdkClient(Sdk, port, opts);

  describe(`centrifuge SDK (${enc}): recovery`, () => {
    const h = suiteHerald(["--history-size=50"]);

    test("a dropped connection reconnects and recovers every missed publication once, in order", async () => {
      await withProxiedSubscriber(Sdk, h.port, "stream:cf-recover", {}, async ({ sub, proxy }) => {
        let n = 0;
        const publisher = (async () => {
          while (n < 40) {
            n++;
            await publishOk(h.url, { channel: "stream:cf-recover", event: "e", data: { n } });
            await sleep(5);
          }
        })();
        await waitFor(() => sub.pubs.length >= 5, "first publications");
        proxy.drop();
        await publisher;
        await waitFor(() => sub.pubs.length >= 40, "all 40", 8000);
        await sleep(100);
        assert.deepEqual(sub.pubs.map((p) => p.data.n), [...Array(40).keys()].map((i) => i + 1));
        const again = resubscribed(sub);
        assert.equal(again.wasRecovering, true);
        assert.equal(again.recovered, true);
      });
    });

    test("history trimmed past the client's position: subscribed says recovered false", async () => {
      const first = await publishOk(h.url, { channel: "stream:cf-trim", event: "e", data: { n: 0 } });
      const c = client(h.port);
      const probe = subscription(c, "stream:cf-trim");
      probe.subscribe();
      c.connect();
      await waitFor(() => probe.state === "subscribed", "subscribed");
      const epoch = probe.events.find((e) => e.name === "subscribed").ctx.streamPosition.epoch;
      c.removeSubscription(probe);
      for (let i = 1; i <= 60; i++) await publishOk(h.url, { channel: "stream:cf-trim", event: "e", data: { n: i } });
      const sub = subscription(c, "stream:cf-trim", { since: { offset: first["stream:cf-trim"], epoch } });
      sub.subscribe();
      try {
        await waitFor(() => sub.state === "subscribed", "subscribed");
        const ctx = sub.events.find((e) => e.name === "subscribed").ctx;
        assert.equal(ctx.wasRecovering, true);
        assert.equal(ctx.recovered, false);
        assert.equal(ctx.streamPosition.offset, 61);
        assert.equal(sub.pubs.length, 0);
      } finally {
        c.disconnect();
      }
    });

    test("getState with an unrecoverable position gets 112, then subscribes from the position it loads", async () => {
      await publishOk(h.url, { channel: "stream:cf-state", event: "e", data: { n: 1 } });
      const calls = [];
      const c = client(h.port);
      const sub = subscription(c, "stream:cf-state", {
        getState: async () => {
          calls.push(Date.now());
          if (calls.length === 1) return { offset: 1, epoch: "nosuchepoch" };
          // The app loads its state and the channel's current position.
          const pos = (await getJson(h.url, "/v1/channels/stream:cf-state")).json;
          return { offset: pos.offset, epoch: pos.epoch };
        },
      });
      sub.subscribe();
      c.connect();
      try {
        await waitFor(() => sub.state === "subscribed", "subscribed");
        assert.equal(calls.length, 2, "getState again after 112");
        const ctx = sub.events.find((e) => e.name === "subscribed").ctx;
        assert.equal(ctx.recovered, true);
        await publishOk(h.url, { channel: "stream:cf-state", event: "e", data: { n: 2 } });
        await waitFor(() => sub.pubs.length === 1, "the next publication");
        assert.equal(sub.pubs[0].data.n, 2);
      } finally {
        c.disconnect();
      }
    });
  });

  describe(`centrifuge SDK (${enc}): server closes`, () => {
    test("a client that does not keep up is closed with 3008 and reconnects", async () => {
      // The replay after the reconnect (--history-size publications) must stay
      // under the high-water mark, or the recovery itself is a slow client.
      await withHerald(["--client-max-buffer=1048576", "--history-size=4", "--max-publish-bytes=262144"], async (h) => {
        const channel = "stream:cf-slow";
        await withProxiedSubscriber(Sdk, h.port, channel, {}, async ({ c, sub, proxy }) => {
          // The server closes it as a slow client (its own count).
          const slowClosed = await closeAsSlow({ url: h.url, proxy, c, channel, data: (i) => ({ i }) });
          // The count and the close are two updates: wait for the count.
          await waitFor(slowClosed, "herald_disconnects_total{reason=slow_client} counted by the server");
          await waitFor(() => c.state === "connected" && sub.state === "subscribed", "reconnected", 8000);
        });
      });
    });

    test("server shutdown closes with 3001 and the SDK reconnects to another instance", async () => {
      const first = await startHerald([]);
      const second = await startHerald([]);
      // The proxy stands for the load balancer: after the drop it forwards to the second.
      const lb = await startProxy(first.port);
      const { c, sub } = subscribedClient(Sdk, lb.port, "stream:cf-shutdown");
      try {
        await waitFor(() => sub.state === "subscribed", "subscribed");
        lb.retarget(second.port);
        const stopping = first.stop();
        await waitFor(() => c.events.some((e) => e.name === "connecting" && e.ctx.code === 3001), "3001", 8000);
        await stopping;
        await waitFor(() => c.state === "connected" && sub.state === "subscribed", "reconnected", 8000);
        await publishOk(second.url, { channel: "stream:cf-shutdown", event: "e", data: { on: "second" } });
        await waitFor(() => sub.pubs.length === 1, "publication from the second instance");
      } finally {
        c.disconnect();
        await lb.close();
        stopInBackground(second);
      }
    });
  });
}
