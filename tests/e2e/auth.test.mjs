// Authentication over HTTP and SSE (docs/auth.md), against a real herald
// with real keys: start-up refusals, the publish API key, SSE tokens by
// header and by ?token=, every refused token with its exact status, other
// users' channels, the channels claim, CORS (and the log and metric of an
// origin it does not allow), expiry, and that other clients
// keep receiving while refused ones are turned away.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import {
  accountId,
  awaitBackgroundStops,
  badAccountId,
  getJson,
  probeUntilDelivered,
  publish,
  publishOk,
  rawSse,
  sseCurl,
  sleep,
  sseReady,
  startHerald,
  suiteHerald,
  waitUntil,
  withHerald,
} from "./lib/herald.mjs";
import { scrape } from "./lib/metrics.mjs";
import { hsSetup, keyPair, nowS, randomSecret, secretFile, signJwt } from "./lib/tokens.mjs";

const alice = accountId(101);
const bob = accountId(202);

after(awaitBackgroundStops);

/** POST /v1/publish with extra headers; resolves {status, json, headers, text}. */
const publishWith = (url, body, headers = {}) => publish(url, body, { headers });

/** A publishOk that sends the API key. */
const sender = (apiKey) => (url, body) => publishOk(url, body, { headers: { authorization: `Bearer ${apiKey}` } });

/** GET /v1/sse that is expected to be refused: {status, json, headers}. */
async function sseRefused(url, query, headers = {}) {
  const res = await fetch(`${url}/v1/sse?${query}`, { headers: { accept: "text/event-stream", ...headers } });
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text), headers: res.headers };
}

describe("start-up is secure by default", () => {
  test("no JWT key and no API key: refuses to start naming both", async () => {
    await assert.rejects(startHerald([], { insecure: false, timeoutMs: 5000 }), (err) => {
      assert.match(err.message, /exited before listening \(code 1/);
      assert.match(err.message, /no JWT secret/);
      assert.match(err.message, /no publish API key/);
      return true;
    });
  });

  test("a JWT key but no API key: names the API key only", async () => {
    await assert.rejects(
      startHerald([], { insecure: false, timeoutMs: 5000, env: { HERALD_JWT_SECRET: randomSecret() } }),
      (err) => {
        assert.doesNotMatch(err.message, /no JWT secret/);
        assert.match(err.message, /no publish API key/);
        return true;
      },
    );
  });

  test("bad keys are refused: short secret, RS256 without a key, unknown algorithm", async () => {
    const env = { HERALD_API_KEY: "k".repeat(32) };
    await assert.rejects(startHerald([], { insecure: false, env: { ...env, HERALD_JWT_SECRET: "short" } }), /at least 32 bytes/);
    await assert.rejects(startHerald(["--jwt-algorithm=RS256"], { insecure: false, env }), /no JWT public key/);
    await assert.rejects(startHerald(["--jwt-algorithm=none"], { insecure: false, env }), /--jwt-algorithm must be/);
    const ec = keyPair("ec");
    await assert.rejects(
      startHerald(["--jwt-algorithm=RS256", `--jwt-public-key=${secretFile("ec.pem", ec.publicPem)}`], { insecure: false, env }),
      /RSA/,
    );
  });

  test("--insecure starts, logs it loudly and /healthz says so", async () => {
    await withHerald([], { insecure: true }, async (h) => {
      assert.match(h.log(), /INSECURE: no JWT key/);
      assert.match(h.log(), /INSECURE: no API key/);
      const r = await getJson(h.url, "/healthz");
      assert.equal(r.status, 200);
      assert.equal(r.json.insecure, true);
      assert.deepEqual(r.json.auth_off, ["subscriber tokens", "publish API key"]);
    });
  });

  test("secrets from the environment work as well as files", async () => {
    const s = hsSetup();
    await withHerald([], { insecure: false, env: { HERALD_JWT_SECRET: s.secret, HERALD_API_KEY: s.apiKey } }, async (h) => {
      const r = await getJson(h.url, "/healthz");
      assert.equal(r.json.insecure, undefined);
      assert.equal((await publishWith(h.url, { channel: "stream:1", event: "e", data: 1 }, s.auth)).status, 200);
      assert.equal((await publishWith(h.url, { channel: "stream:1", event: "e", data: 1 })).status, 401);
    });
  });
});

describe("HS256 server", () => {
  const s = hsSetup();
  const h = suiteHerald([...s.args, "--allowed-origins=https://app.example", "--jwt-leeway=1", "--log-level=debug"], {
    insecure: false,
  });
  const send = sender(s.apiKey);

  test("publish needs the API key: 401 without or with a wrong one", async () => {
    const body = { channel: "stream:1", event: "e", data: 1 };
    let r = await publishWith(h.url, body);
    assert.equal(r.status, 401);
    assert.equal(r.json.error.code, "unauthorized");
    assert.equal(r.headers.get("www-authenticate"), "Bearer");
    r = await publishWith(h.url, body, { authorization: `Bearer ${s.apiKey}x` });
    assert.equal(r.status, 401);
    r = await publishWith(h.url, body, { authorization: `Bearer ${s.apiKey.slice(0, -1)}` });
    assert.equal(r.status, 401);
    r = await publishWith(h.url, body, { authorization: s.apiKey });
    assert.equal(r.status, 401);
    r = await publishWith(h.url, body, s.auth);
    assert.equal(r.status, 200);
    assert.equal(typeof r.json.offsets["stream:1"], "number");
  });

  test("a good token delivers over the header and over ?token=", async () => {
    const token = s.token({ sub: alice });
    const channels = ["stream:a1", `user:${alice}`];
    const viaHeader = await sseReady(h.url, channels, { headers: { authorization: `Bearer ${token}` }, send });
    const viaQuery = await sseReady(h.url, channels, { query: `&token=${token}`, send });
    try {
      await send(h.url, { channels: [`user:${alice}`], event: "paid", data: { amount: "1.0000000" } });
      for (const sub of [viaHeader, viaQuery])
        await sub.events.until((items) => items.some((e) => e.event === "paid"), { what: "paid" });
    } finally {
      await viaHeader.close();
      await viaQuery.close();
    }
    // Never logged (the server runs at debug level here).
    assert.ok(!h.log().includes(token.split(".")[2]), "the token is not in the log");
  });

  test("every bad token is refused with 401 and its reason, while another client keeps receiving", async () => {
    const watcher = await sseReady(h.url, ["stream:keep"], { query: `&token=${s.token({ sub: alice })}`, send });
    const rsa = keyPair("rsa");
    const ch = `channel=user:${alice}`;
    const cases = [
      ["expired", s.token({ sub: alice, exp: nowS() - 60 }), /token expired/],
      ["not yet valid", s.token({ sub: alice, nbf: nowS() + 600 }), /not yet valid/],
      ["iat in the future", s.token({ sub: alice, iat: nowS() + 600 }), /issued in the future/],
      ["wrong signature", signJwt({ sub: alice, exp: nowS() + 60 }, { alg: "HS256", key: randomSecret() }), /signature invalid/],
      ["alg none", signJwt({ sub: alice, exp: nowS() + 60 }, { alg: "none" }), /algorithm not accepted/],
      ["RS256 on an HS256 server", signJwt({ sub: alice, exp: nowS() + 60 }, { alg: "RS256", key: rsa.privateKey }), /algorithm not accepted/],
      ["missing exp", signJwt({ sub: alice }, { alg: "HS256", key: s.secret }), /no exp/],
      ["garbage", "not-a-token", /malformed/],
      // RFC 7515 section 4.1.11: Herald understands no extension (was: accepted).
      [
        "crit header, validly signed",
        signJwt({ sub: alice, exp: nowS() + 60 }, { alg: "HS256", key: s.secret, header: { crit: ["foo"], foo: 1 } }),
        /token header has crit/,
      ],
      [
        "crit b64:false, validly signed",
        signJwt({ sub: alice, exp: nowS() + 60 }, { alg: "HS256", key: s.secret, header: { crit: ["b64"], b64: false } }),
        /token header has crit/,
      ],
    ];
    try {
      for (const [name, token, reason] of cases) {
        for (const [how, query, headers] of [
          ["header", ch, { authorization: `Bearer ${token}` }],
          ["query", `${ch}&token=${encodeURIComponent(token)}`, {}],
        ]) {
          const r = await sseRefused(h.url, query, headers);
          assert.equal(r.status, 401, `${name} via ${how}`);
          assert.equal(r.json.error.code, "unauthorized", `${name} via ${how}`);
          assert.match(r.json.error.message, reason, `${name} via ${how}`);
        }
      }
      const none = await sseRefused(h.url, ch);
      assert.equal(none.status, 401);
      // The watcher kept receiving meanwhile.
      await probeUntilDelivered(h.url, watcher.events, ["stream:keep"], {
        send,
        isProbe: (e, tag) => e.event === "probe" && e.data === JSON.stringify({ probe: tag }),
      });
    } finally {
      await watcher.close();
    }
  });

  test("another user's channel is 403, also when one of several channels is refused", async () => {
    const token = s.token({ sub: alice });
    let r = await sseRefused(h.url, `channel=user:${bob}`, { authorization: `Bearer ${token}` });
    assert.equal(r.status, 403);
    assert.equal(r.json.error.code, "forbidden");
    assert.match(r.json.error.message, new RegExp(bob));
    r = await sseRefused(h.url, `channel=stream:1&channel=user:${alice}&channel=user:${bob}&token=${token}`);
    assert.equal(r.status, 403);
    // A SEP-10 shared account "G...:memo" does not read the plain account.
    r = await sseRefused(h.url, `channel=user:${alice}&token=${s.token({ sub: `${alice}:1234` })}`);
    assert.equal(r.status, 403);
    // A sub that is not a valid StrKey (bad checksum, lowercase) reads no user: channel ...
    for (const sub of [badAccountId(101), alice.toLowerCase()]) {
      r = await sseRefused(h.url, `channel=user:${alice}&token=${s.token({ sub })}`);
      assert.equal(r.status, 403, sub);
    }
    // ... but stream channels, like any authenticated client.
    const ok = await sseReady(h.url, ["stream:memo"], { query: `&token=${s.token({ sub: `${alice}:1234` })}`, send });
    await ok.close();
  });

  test("the channels claim narrows what a token reads", async () => {
    const token = s.token({ sub: alice, channels: ["stream:pay-*", `user:${alice}`] });
    let r = await sseRefused(h.url, `channel=stream:other&token=${token}`);
    assert.equal(r.status, 403);
    assert.equal(r.json.error.code, "forbidden");
    const sub = await sseReady(h.url, ["stream:pay-7", `user:${alice}`], { query: `&token=${token}`, send });
    await sub.close();
    const narrow = s.token({ sub: alice, channels: ["stream:1"] });
    r = await sseRefused(h.url, `channel=user:${alice}&token=${narrow}`);
    assert.equal(r.status, 403);
  });

  test("CORS: listed origins get Access-Control-Allow-Origin, preflight allows Authorization", async () => {
    const pre = await fetch(`${h.url}/v1/sse?channel=stream:1`, {
      method: "OPTIONS",
      headers: { origin: "https://app.example", "access-control-request-method": "GET", "access-control-request-headers": "authorization" },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get("access-control-allow-origin"), "https://app.example");
    assert.match(pre.headers.get("access-control-allow-headers"), /Authorization/);
    const other = await fetch(`${h.url}/v1/sse?channel=stream:1`, { method: "OPTIONS", headers: { origin: "https://evil.example" } });
    assert.equal(other.headers.get("access-control-allow-origin"), null);
    const refused = await sseRefused(h.url, "channel=stream:1", { origin: "https://app.example" });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get("access-control-allow-origin"), "https://app.example");
    const sub = sseCurl(`${h.url}/v1/sse?channel=stream:1&token=${s.token({ sub: alice })}`, { origin: "https://app.example" });
    try {
      assert.equal(await sub.status, 200);
      assert.equal((await sub.headers)["access-control-allow-origin"], "https://app.example");
    } finally {
      await sub.close();
    }
  });

  test("SSE from an origin not allowed: answered without CORS, logged with the hint and counted", async () => {
    const denied = async () => (await scrape(h.url)).get("herald_sse_cors_denied_total");
    // The earlier tests' refusals may have used up this second of the client
    // log limiter (--log-client-rate, 10 lines per kind): start a new one.
    await sleep(1100);
    const before = await denied();
    const logFrom = h.log().length; // the CORS test above logged its own evil origin
    // Not counted: a listed origin, the server itself, no Origin (curl, servers).
    await sseRefused(h.url, "channel=stream:1", { origin: "https://app.example" });
    await sseRefused(h.url, "channel=stream:1", { origin: `http://127.0.0.1:${h.port}` });
    await sseRefused(h.url, "channel=stream:1");
    assert.equal(await denied(), before);
    assert.doesNotMatch(h.log().slice(logFrom), /origin not allowed/);

    // Another site's page: a 200 stream, a 401 and a preflight, none with
    // Access-Control-Allow-Origin (the browser refuses them): each counted.
    const evil = "https://evil.example";
    const sub = sseCurl(`${h.url}/v1/sse?channel=stream:1&token=${s.token({ sub: alice })}`, { origin: evil });
    try {
      assert.equal(await sub.status, 200);
      assert.equal((await sub.headers)["access-control-allow-origin"], undefined);
    } finally {
      await sub.close();
    }
    const refused = await sseRefused(h.url, "channel=stream:1", { origin: evil });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get("access-control-allow-origin"), null);
    const pre = await fetch(`${h.url}/v1/sse?channel=stream:1`, { method: "OPTIONS", headers: { origin: evil } });
    assert.equal(pre.status, 204);
    assert.equal(await denied(), before + 3);

    // The log says what happened and what to do, rate-limited as bad_request
    // (7 lines of that kind in this second, under the limit).
    const lines = await waitUntil(
      () => {
        const found = h
          .log()
          .slice(logFrom)
          .split("\n")
          .filter((l) => l.includes("SSE request from an origin not allowed"));
        return found.length >= 3 && found;
      },
      { timeoutMs: 3000, what: "the origin log lines" },
    );
    for (const line of lines) {
      assert.match(line, /\bkind=bad_request\b/);
      assert.match(line, /\borigin=https:\/\/evil\.example\b/);
      assert.match(line, /add it to --allowed-origins/);
      assert.match(line, /\bpeer=127\.0\.0\.1:\d+/);
    }
    assert.ok(!h.log().includes("token="), "no query string in the log");
  });

  test("an expiring token ends the SSE stream with herald.token_expired; others keep receiving", async () => {
    const watcher = await sseReady(h.url, ["stream:exp"], { query: `&token=${s.token({ sub: bob })}`, send });
    const exp = nowS() + 2;
    const short = await sseReady(h.url, ["stream:exp"], { query: `&token=${s.token({ sub: alice, exp })}`, send });
    try {
      // Leeway is 1 s here: the stream ends at exp + 1.
      const ended = await short.events.until((items) => items.find((e) => e.event === "herald.token_expired"), {
        timeoutMs: 10_000,
        what: "herald.token_expired",
      });
      assert.deepEqual(JSON.parse(ended.data), { reason: "token_expired" });
      assert.ok(Date.now() / 1000 >= exp + 1 - 0.5, "not before exp + leeway");
      await short.exited;
      // Nothing is delivered to it afterwards; the watcher still receives.
      await probeUntilDelivered(h.url, watcher.events, ["stream:exp"], {
        send,
        isProbe: (e, tag) => e.event === "probe" && e.data === JSON.stringify({ probe: tag }),
      });
    } finally {
      await short.close();
      await watcher.close();
    }
  });
});

describe("RS256 and ES256 servers, issuer and audience", () => {
  for (const [alg, kind] of [
    ["RS256", "rsa"],
    ["ES256", "ec"],
  ]) {
    test(`${alg}: good token delivers; HS256 keyed with the public key is refused`, async () => {
      const pair = keyPair(kind);
      const apiKey = randomSecret();
      const args = [
        `--jwt-algorithm=${alg}`,
        `--jwt-public-key=${secretFile("key.pem", pair.publicPem)}`,
        "--jwt-issuer=https://anchor.example/auth",
        "--jwt-audience=herald",
      ];
      const send = sender(apiKey);
      await withHerald(args, { insecure: false, env: { HERALD_API_KEY: apiKey } }, async (h) => {
        const claims = { sub: alice, exp: nowS() + 300, iss: "https://anchor.example/auth", aud: ["wallet", "herald"] };
        const good = signJwt(claims, { alg, key: pair.privateKey });
        const sub = await sseReady(h.url, [`user:${alice}`], { headers: { authorization: `Bearer ${good}` }, send });
        await sub.close();
        // The key-confusion attack: HMAC keyed with the (public) PEM text.
        const forged = signJwt(claims, { alg: "HS256", key: pair.publicPem });
        let r = await sseRefused(h.url, `channel=user:${alice}`, { authorization: `Bearer ${forged}` });
        assert.equal(r.status, 401);
        assert.match(r.json.error.message, /algorithm not accepted/);
        const other = signJwt(claims, { alg, key: keyPair(kind).privateKey });
        r = await sseRefused(h.url, `channel=user:${alice}`, { authorization: `Bearer ${other}` });
        assert.match(r.json.error.message, /signature invalid/);
        r = await sseRefused(h.url, `channel=user:${alice}`, {
          authorization: `Bearer ${signJwt({ ...claims, iss: "https://evil.example" }, { alg, key: pair.privateKey })}`,
        });
        assert.equal(r.status, 401);
        assert.match(r.json.error.message, /issuer not accepted/);
        r = await sseRefused(h.url, `channel=user:${alice}`, {
          authorization: `Bearer ${signJwt({ ...claims, aud: "wallet" }, { alg, key: pair.privateKey })}`,
        });
        assert.equal(r.status, 401);
        assert.match(r.json.error.message, /audience not accepted/);
      });
    });
  }
});

describe("--anonymous-streams", () => {
  test("stream channels without a token, nothing else", async () => {
    const s = hsSetup();
    await withHerald([...s.args, "--anonymous-streams"], { insecure: false }, async (h) => {
      const send = sender(s.apiKey);
      const sub = await sseReady(h.url, ["stream:open"], { send });
      await sub.close();
      const r = await sseRefused(h.url, `channel=stream:open&channel=user:${alice}`);
      assert.equal(r.status, 401);
      assert.equal(r.json.error.code, "unauthorized");
    });
  });
});
