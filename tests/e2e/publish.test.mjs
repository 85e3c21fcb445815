// POST /v1/publish and the other HTTP routes against a real herald: exact
// replies, every documented error, and the recovery seam under concurrent
// publishing (SSE and WebSocket subscribers reconnecting mid-way).
// See docs/protocol.md.

import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { after, describe, test } from "node:test";

import { encodeAccountId } from "../../demo/strkey.mjs";
import {
  awaitBackgroundStops,
  badAccountId,
  channelHash,
  channelOfEvent,
  cursorPosition,
  getJson,
  makeCursor,
  publish,
  publishOk,
  rawSse,
  sleep,
  sseCurl,
  suiteHerald,
  waitUntil,
} from "./lib/herald.mjs";
import { hsSetup } from "./lib/tokens.mjs";
import { wsConnect, wsSubscribe } from "./lib/ws.mjs";

const USER_A = encodeAccountId(Uint8Array.from({ length: 32 }, (_, i) => i));
const USER_B = encodeAccountId(Uint8Array.from({ length: 32 }, (_, i) => 100 + i));
const TEST_TIMEOUT = 20_000;
const MAX_PUBLISH = 1024;

/** Sends raw bytes on a fresh connection and returns everything the server sent until it closed (or `ms`). */
async function rawExchange(port, bytes, ms = 2000) {
  const socket = net.connect(port, "127.0.0.1");
  socket.on("error", () => {});
  let out = "";
  socket.setEncoding("utf8");
  socket.on("data", (d) => (out += d));
  await new Promise((resolve) => socket.once("connect", resolve));
  socket.write(bytes);
  await Promise.race([new Promise((resolve) => socket.once("close", resolve)), sleep(ms)]);
  socket.destroy();
  return out;
}

/** Parses a raw HTTP/1.1 response text (Content-Length body) into {status, headers, json}. */
function parseRawResponse(text) {
  const end = text.indexOf("\r\n\r\n");
  assert.ok(end > 0, `an HTTP response: ${JSON.stringify(text.slice(0, 200))}`);
  const lines = text.slice(0, end).split("\r\n");
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(lines[0])?.[1]);
  const headers = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(":");
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  const body = text.slice(end + 4);
  let json;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { status, headers, body, json };
}

/** Asserts an HTTP error reply: status, JSON content type and body {"error":{"code","message"}}. */
function assertError(r, status, code, what) {
  const text = r.text ?? r.body;
  assert.equal(r.status, status, `${what}: status (body ${text?.slice(0, 200)})`);
  const ct = typeof r.headers.get === "function" ? r.headers.get("content-type") : r.headers["content-type"];
  assert.match(ct ?? "", /^application\/json/, `${what}: content type`);
  assert.ok(r.json && typeof r.json.error === "object", `${what}: JSON error body: ${text?.slice(0, 200)}`);
  assert.deepEqual(Object.keys(r.json), ["error"], `${what}: only "error" at the top`);
  assert.deepEqual(Object.keys(r.json.error).sort(), ["code", "message"], `${what}: error has code and message`);
  assert.equal(r.json.error.code, code, `${what}: error code`);
  assert.equal(typeof r.json.error.message, "string");
}

// Herald processes stopped in the background by the suites: wait for them.
after(() => awaitBackgroundStops());

describe("publish and HTTP routes", () => {
  const h = suiteHerald([`--max-publish-bytes=${MAX_PUBLISH}`, "--max-channels-per-publish=4"]);

  test("valid single and multi publish: exact replies, offsets increase per channel", { timeout: TEST_TIMEOUT }, async () => {
    const a = "stream:pub-a";
    const b = `user:${USER_A}`;
    const r1 = await publish(h.url, { channel: a, event: "created", data: { x: 1 } });
    assert.equal(r1.status, 200);
    assert.match(r1.headers.get("content-type"), /^application\/json/);
    assert.equal(r1.text, `{"offsets":{"${a}":1}}`);
    const r2 = await publish(h.url, { channel: a, event: "withdrawn", data: null });
    assert.equal(r2.text, `{"offsets":{"${a}":2}}`);
    const r3 = await publish(h.url, { channels: [a, b], event: "topped_up", data: [1, 2] });
    assert.equal(r3.status, 200);
    assert.deepEqual(r3.json, { offsets: { [a]: 3, [b]: 1 } });
    // Repeats count once.
    const r4 = await publish(h.url, { channels: [b, b, a, b], event: "paused", data: "x" });
    assert.deepEqual(r4.json, { offsets: { [b]: 2, [a]: 4 } });
    assert.equal(Object.keys(r4.json.offsets).length, 2);
    // Event name edge cases that are valid.
    for (const event of ["a", "x".repeat(64), "A-Z_a.z:0-9", "herald", "heraldry.x", "Herald.x"]) {
      const r = await publish(h.url, { channel: a, event, data: 0 });
      assert.equal(r.status, 200, `event ${JSON.stringify(event)}: ${r.text}`);
    }
    // The limit of channels per publish (--max-channels-per-publish=4), repeats counting once.
    const four = ["stream:p1", "stream:p2", "stream:p3", "stream:p4"];
    assert.equal((await publish(h.url, { channels: [...four, "stream:p1"], event: "e", data: 1 })).status, 200);
    assertError(
      await publish(h.url, { channels: [...four, "stream:p5"], event: "e", data: 1 }),
      400,
      "too_many_channels",
      "5 channels",
    );
    // Data nested 60 deep is fine.
    const deep = JSON.parse("[".repeat(60) + "]".repeat(60));
    assert.equal((await publish(h.url, { channel: a, event: "deep", data: deep })).status, 200);
  });

  test(
    "multi-channel reply lists the channels in request order",
    { timeout: TEST_TIMEOUT },
    async () => {
      const r = await publish(h.url, { channels: [`user:${USER_B}`, "stream:zz", "stream:aa"], event: "e", data: 1 });
      assert.equal(r.status, 200);
      assert.deepEqual(Object.keys(r.json.offsets), [`user:${USER_B}`, "stream:zz", "stream:aa"], r.text);
      assert.equal(r.text, `{"offsets":{"user:${USER_B}":1,"stream:zz":1,"stream:aa":1}}`);
    },
  );

  test("every bad publish gets its exact status and error code", { timeout: TEST_TIMEOUT }, async () => {
    const ok = { channel: "stream:pub-bad", event: "e", data: 1 };
    const badUser = `user:${badAccountId(1)}`;
    const cases = [
      ["invalid JSON", '{"channel":"stream:x",', 400, "invalid_json"],
      ["trailing garbage", JSON.stringify(ok) + "x", 400, "invalid_json"],
      ["empty body", "", 400, "invalid_json"],
      ["array", JSON.stringify([ok]), 400, "invalid_json"],
      ["string", '"hello"', 400, "invalid_json"],
      ["number", "42", 400, "invalid_json"],
      ["null", "null", 400, "invalid_json"],
      ["nested 100 deep", JSON.stringify({ ...ok, data: JSON.parse("[".repeat(100) + "]".repeat(100)) }), 400, "invalid_json"],
      [
        "nested 100 deep in objects",
        `{"channel":"stream:x","event":"e","data":${'{"a":'.repeat(100)}1${"}".repeat(100)}}`,
        400,
        "invalid_json",
      ],
      ["missing event", { channel: ok.channel, data: 1 }, 400, "invalid_request"],
      ["event not a string", { ...ok, event: 5 }, 400, "invalid_request"],
      ["missing data", { channel: ok.channel, event: "e" }, 400, "invalid_request"],
      ["missing channel", { event: "e", data: 1 }, 400, "invalid_request"],
      ["both channel and channels", { ...ok, channels: ["stream:y"] }, 400, "invalid_request"],
      ["channel not a string", { ...ok, channel: ["stream:x"] }, 400, "invalid_request"],
      ["channels empty", { event: "e", data: 1, channels: [] }, 400, "invalid_request"],
      ["channels a string", { event: "e", data: 1, channels: "stream:x" }, 400, "invalid_request"],
      ["channels with a number", { event: "e", data: 1, channels: ["stream:x", 5] }, 400, "invalid_request"],
      ["invalid channel foo:1", { ...ok, channel: "foo:1" }, 400, "invalid_channel"],
      ["empty stream id", { ...ok, channel: "stream:" }, 400, "invalid_channel"],
      ["stream id of 129", { ...ok, channel: `stream:${"a".repeat(129)}` }, 400, "invalid_channel"],
      ["stream id with a space", { ...ok, channel: "stream:a b" }, 400, "invalid_channel"],
      ["user with a bad checksum", { ...ok, channel: badUser }, 400, "invalid_channel"],
      ["user in lower case", { ...ok, channel: `user:${USER_A.toLowerCase()}` }, 400, "invalid_channel"],
      ["user too short", { ...ok, channel: `user:${USER_A.slice(0, 55)}` }, 400, "invalid_channel"],
      ["user too long", { ...ok, channel: `user:${USER_A}A` }, 400, "invalid_channel"],
      ["user with a seed's version byte (S...)", { ...ok, channel: `user:${badAccountId(2, { version: 18 << 3, breakChecksum: false })}` }, 400, "invalid_channel"],
      ["user with a muxed version byte (M...)", { ...ok, channel: `user:${badAccountId(3, { version: 12 << 3, breakChecksum: false })}` }, 400, "invalid_channel"],
      ["user with a valid id's last character changed", { ...ok, channel: `user:${USER_A.slice(0, -1)}${USER_A.at(-1) === "A" ? "B" : "A"}` }, 400, "invalid_channel"],
      ["one invalid in channels", { event: "e", data: 1, channels: ["stream:ok", "nope"] }, 400, "invalid_channel"],
      ["event with herald. prefix", { ...ok, event: "herald.gap" }, 400, "invalid_event"],
      ["empty event", { ...ok, event: "" }, 400, "invalid_event"],
      ["event of 65", { ...ok, event: "x".repeat(65) }, 400, "invalid_event"],
      ["event with a space", { ...ok, event: "a b" }, 400, "invalid_event"],
      ["event with a newline", { ...ok, event: "a\ndata: x" }, 400, "invalid_event"],
      ["event non-ASCII", { ...ok, event: "é" }, 400, "invalid_event"],
    ];
    for (const [name, body, status, code] of cases) {
      const r = await publish(h.url, body);
      assertError(r, status, code, name);
    }
    // Nothing of the above was published.
    const r = await publish(h.url, ok);
    assert.deepEqual(r.json, { offsets: { [ok.channel]: 1 } });
  });

  test("issue 39: an unknown field is refused by name; errors point at the fault", { timeout: TEST_TIMEOUT }, async () => {
    const ok = { channel: "stream:pub-typo", event: "e", data: 1 };
    // Was: 200, stored without the version check / the tags the typo meant.
    for (const [field, value] of [["verison", 5], ["tag", { asset: "USDC" }], ["chanel", "stream:x"]]) {
      const r = await publish(h.url, { ...ok, [field]: value });
      assertError(r, 400, "invalid_request", field);
      assert.match(r.json.error.message, new RegExp(`^unknown field "${field}" \\(known: channel channels event data`), field);
    }
    // Was: "invalid channel name" for each; now the channel (or its index) and the rule.
    const badUser = `user:${badAccountId(1)}`;
    const channelCases = [
      [{ ...ok, channel: "stream:a b" }, 'invalid channel "stream:a b": the id after "stream:" allows only'],
      [{ ...ok, channel: "Stream:1" }, 'invalid channel "Stream:1": a channel starts with "stream:" or "user:"'],
      [{ ...ok, channel: `stream:${"a".repeat(129)}` }, "must be 1-128 characters"],
      [{ event: "e", data: 1, channels: ["stream:ok", "nope"] }, 'channels[1]: invalid channel "nope"'],
      [{ ...ok, channel: badUser }, "checksum"],
      [{ ...ok, channel: `user:${USER_A.toLowerCase()}` }, "must be upper case"],
      [{ ...ok, channel: `user:${USER_A.slice(0, 55)}` }, "must be 56 characters"],
      [{ ...ok, channel: `user:${badAccountId(3, { version: 12 << 3, breakChecksum: false })}` }, "muxed account"],
      [{ ...ok, channel: `user:${badAccountId(2, { version: 18 << 3, breakChecksum: false })}` }, "secret seed"],
    ];
    for (const [body, text] of channelCases) {
      const r = await publish(h.url, body);
      assertError(r, 400, "invalid_channel", text);
      assert.ok(r.json.error.message.includes(text), `${text}: ${r.json.error.message}`);
    }
    // Was: "the body must be a JSON object, with data nested at most 64 deep" for each.
    const jsonCases = [
      ['{"channel":"stream:x",', /^the body is not valid JSON at byte \d+: /],
      ['{"channel":"stream:x","event":"e","data":1}x', /^the body is not valid JSON at byte 44: /],
      ["[1]", /^the body must be a JSON object, not an array$/],
      [JSON.stringify({ ...ok, data: JSON.parse("[".repeat(100) + "]".repeat(100)) }), /^the body nests deeper than 64 levels/],
    ];
    for (const [body, re] of jsonCases) {
      const r = await publish(h.url, body);
      assertError(r, 400, "invalid_json", body.slice(0, 30));
      assert.match(r.json.error.message, re);
    }
    // GET /v1/channels/{name}, SSE and /v1/ws say the same.
    const pos = await getJson(h.url, `/v1/channels/user:${USER_A.slice(0, 50)}`);
    assertError(pos, 400, "invalid_channel", "position");
    assert.ok(pos.json.error.message.includes("must be 56 characters"), pos.json.error.message);
    const sse = await getJson(h.url, `/v1/sse?channel=stream:a%20b`);
    assertError(sse, 400, "invalid_channel", "sse");
    assert.equal(sse.json.error.message, '?channel=: invalid channel "stream:a b": the id after "stream:" allows only A-Z a-z 0-9 _ . -');
    const ws = await wsConnect(h.url);
    try {
      const reply = await wsSubscribe(ws, `user:${USER_A.toLowerCase()}`);
      assert.equal(reply.op, "error");
      assert.equal(reply.code, "invalid_channel");
      assert.ok(reply.message.includes("must be upper case"), reply.message);
    } finally {
      await ws.close();
    }
    // Nothing of the above was published.
    const r = await publish(h.url, ok);
    assert.deepEqual(r.json, { offsets: { [ok.channel]: 1 } });
  });

  test(`body over --max-publish-bytes=${MAX_PUBLISH}: 413 payload_too_large`, { timeout: TEST_TIMEOUT }, async () => {
    const body = { channel: "stream:pub-big", event: "e", data: "" };
    body.data = "x".repeat(MAX_PUBLISH - JSON.stringify(body).length);
    assert.equal(JSON.stringify(body).length, MAX_PUBLISH);
    const exact = await publish(h.url, body);
    assert.equal(exact.status, 200, `a body of exactly the limit is accepted: ${exact.text}`);

    body.data += "x";
    assertError(await publish(h.url, body), 413, "payload_too_large", "limit + 1");
    body.data = "x".repeat(4000);
    assertError(await publish(h.url, body), 413, "payload_too_large", "4 KB");

    // Chunked transfer encoding (no Content-Length): counted as it arrives.
    const chunked = await new Promise((resolve, reject) => {
      const req = http.request(
        `${h.url}/v1/publish`,
        { method: "POST", agent: false, headers: { "content-type": "application/json", "transfer-encoding": "chunked" } },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (c) => (text += c));
          res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, text, json: JSON.parse(text) }));
        },
      );
      req.on("error", reject);
      const payload = JSON.stringify({ channel: "stream:pub-big", event: "e", data: "y".repeat(3000) });
      for (let i = 0; i < payload.length; i += 500) req.write(payload.slice(i, i + 500));
      req.end();
    });
    assertError(chunked, 413, "payload_too_large", "chunked");

    // Chunked under the limit is fine.
    const parts = ['{"channel":"stre', 'am:pub-big","event":"e",', '"data":"chunked"}'];
    const small = await rawExchange(
      h.port,
      "POST /v1/publish HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
        parts.map((p) => `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`).join("") +
        "0\r\n\r\n",
    );
    const parsed = parseRawResponse(small);
    assert.equal(parsed.status, 200, small);
    assert.deepEqual(parsed.json, { offsets: { "stream:pub-big": 2 } });
  });

  test("routes: unknown 404, wrong method 405, /healthz, /, malformed HTTP, oversized head", { timeout: TEST_TIMEOUT }, async () => {
    assertError(await getJson(h.url, "/nope"), 404, "not_found", "GET /nope");
    assertError(await getJson(h.url, "/v1/publish/extra", { method: "POST", body: "{}" }), 404, "not_found", "POST /v1/publish/extra");
    assertError(await getJson(h.url, "/v1/publish"), 405, "method_not_allowed", "GET /v1/publish");
    assertError(await getJson(h.url, "/v1/publish", { method: "PUT", body: "{}" }), 405, "method_not_allowed", "PUT /v1/publish");
    assertError(await getJson(h.url, "/v1/sse?channel=stream:x", { method: "POST", body: "" }), 405, "method_not_allowed", "POST /v1/sse");
    assertError(await getJson(h.url, "/healthz", { method: "DELETE" }), 405, "method_not_allowed", "DELETE /healthz");
    assertError(await getJson(h.url, "/v1/ws"), 400, "invalid_request", "GET /v1/ws without upgrade");

    const health = await getJson(h.url, "/healthz");
    assert.equal(health.status, 200);
    assert.match(health.headers.get("content-type"), /^application\/json/);
    // This suite runs --insecure, which /healthz reports (docs/auth.md).
    assert.deepEqual(Object.keys(health.json).sort(), ["auth_off", "connections", "insecure", "mode", "status"]);
    assert.equal(health.json.status, "ok");
    assert.equal(health.json.mode, "in-process");
    assert.ok(Number.isInteger(health.json.connections) && health.json.connections >= 0);

    // GET / is the status page for browsers; JSON clients get the route index.
    const root = await getJson(h.url, "/", { headers: { accept: "application/json" } });
    assert.equal(root.status, 200);
    assert.ok(Array.isArray(root.json.routes));
    for (const r of ["GET /v1/sse", "GET /v1/ws", "POST /v1/publish", "GET /healthz", "GET /demo"]) {
      assert.ok(root.json.routes.includes(r), `routes list ${r}`);
    }
    const demo = await fetch(`${h.url}/demo`);
    assert.equal(demo.status, 200);
    assert.match(demo.headers.get("content-type"), /^text\/html/);
    await demo.text();

    const garbage = parseRawResponse(await rawExchange(h.port, "GARBAGE\r\n\r\n"));
    assertError(garbage, 400, "invalid_request", "malformed HTTP");

    const bigHead = parseRawResponse(
      await rawExchange(h.port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(10_000)}\r\n\r\n`),
    );
    assertError(bigHead, 431, "headers_too_large", "head over 8192 bytes");

    // Still serving.
    assert.equal((await getJson(h.url, "/healthz")).status, 200);
  });

  test(
    "405 replies list the route's allowed method in Allow",
    {
      timeout: TEST_TIMEOUT,
    },
    async () => {
      const pub = await getJson(h.url, "/v1/publish");
      assert.equal(pub.status, 405);
      assert.equal(pub.headers.get("allow"), "POST");
      const sse = await getJson(h.url, "/v1/sse?channel=stream:x", { method: "POST", body: "" });
      assert.equal(sse.status, 405);
      assert.equal(sse.headers.get("allow"), "GET");
    },
  );
});

describe("repeated singular parameters are refused on every route (secured server)", () => {
  const s = hsSetup();
  const h = suiteHerald(s.args, { insecure: false });
  const alice = encodeAccountId(Uint8Array.from({ length: 32 }, (_, i) => 7 + i));

  /** One raw request (Connection: close); `lines` are header lines as sent, repeats included. */
  async function raw(method, target, lines, body = "") {
    const head = [`${method} ${target} HTTP/1.1`, `Host: 127.0.0.1:${h.port}`, "Connection: close", ...lines];
    if (body) head.push("Content-Type: application/json", `Content-Length: ${Buffer.byteLength(body)}`);
    return parseRawResponse(await rawExchange(h.port, `${head.join("\r\n")}\r\n\r\n${body}`));
  }

  /** Asserts `400 invalid_request` naming `name`. */
  function refused(r, name, what) {
    assertError(r, 400, "invalid_request", what);
    assert.ok(r.json.error.message.includes(name), `${what}: names ${name}: ${r.json.error.message}`);
  }

  test("SSE: two ?token= (was: the last one used), two ?last_event_id=, two Last-Event-ID, two Authorization", { timeout: TEST_TIMEOUT }, async () => {
    const good = s.token({ sub: alice });
    const other = s.token({ sub: encodeAccountId(Uint8Array.from({ length: 32 }, (_, i) => 50 + i)) });
    const ch = `channel=user:${alice}&channel=stream:rep`;
    // Either order, and the same value twice: a reader keeping the first or the last would differ.
    for (const q of [`token=${other}&token=${good}`, `token=${good}&token=${other}`, `token=${good}&token=${good}`])
      refused(await raw("GET", `/v1/sse?${ch}&${q}`, ["Accept: text/event-stream"]), "token", `?${q.slice(0, 12)}`);
    refused(await raw("GET", `/v1/sse?${ch}&token=${good}&last_event_id=a&last_event_id=b`, []), "last_event_id", "two ?last_event_id=");
    refused(await raw("GET", `/v1/sse?${ch}&token=${good}`, ["Last-Event-ID: a", "Last-Event-ID: b"]), "Last-Event-ID", "two Last-Event-ID");
    refused(await raw("GET", `/v1/sse?${ch}`, [`Authorization: Bearer ${good}`, `Authorization: Bearer ${other}`]), "Authorization", "two Authorization");
    // Repeated channel is fine (SSE subscribes to several); one token is served.
    const ok = await rawSse(h.port, `/v1/sse?channel=stream:rep&channel=stream:rep2&token=${good}`);
    try {
      await waitUntil(() => ok.text().startsWith("HTTP/1.1 200"), { what: "200 with one token" });
    } finally {
      ok.destroy();
    }
  });

  test("WebSocket upgrades (/v1/ws, /connection/websocket): two Authorization, Origin, Sec-WebSocket-Key", { timeout: TEST_TIMEOUT }, async () => {
    const good = s.token({ sub: alice });
    const upgrade = ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Version: 13"];
    const key = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==";
    for (const path of ["/v1/ws", "/connection/websocket"]) {
      refused(await raw("GET", path, [...upgrade, key, `Authorization: Bearer ${good}`, "Authorization: Bearer x.y.z"]), "Authorization", `${path} two Authorization`);
      refused(await raw("GET", path, [...upgrade, key, "Origin: https://evil.example", `Origin: http://127.0.0.1:${h.port}`]), "Origin", `${path} two Origin`);
      refused(await raw("GET", path, [...upgrade, key, "Sec-WebSocket-Key: AQIDBAUGBwgJCgsMDQ4PEA=="]), "Sec-WebSocket-Key", `${path} two keys`);
      // One of each upgrades.
      const ok = await rawExchange(h.port, `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${[...upgrade, key, `Authorization: Bearer ${good}`].join("\r\n")}\r\n\r\n`, 300);
      assert.match(ok, /^HTTP\/1\.1 101 /, `${path}: one of each upgrades`);
    }
  });

  test("publish: two Idempotency-Key (was: the first one used), two Authorization; nothing is stored", { timeout: TEST_TIMEOUT }, async () => {
    const body = JSON.stringify({ channel: "stream:rep-pub", event: "e", data: 1 });
    const auth = `Authorization: Bearer ${s.apiKey}`;
    refused(await raw("POST", "/v1/publish", [auth, "Idempotency-Key: k1", "Idempotency-Key: k2"], body), "Idempotency-Key", "two Idempotency-Key");
    refused(await raw("POST", "/v1/publish", [auth, "idempotency-key: k1", "IDEMPOTENCY-KEY: k1"], body), "Idempotency-Key", "same key twice, other case");
    refused(await raw("POST", "/v1/publish", [auth, "Authorization: Bearer wrong"], body), "Authorization", "two Authorization");
    const pos = await raw("GET", "/v1/channels/stream:rep-pub", [auth]);
    assert.equal(pos.status, 200);
    assert.equal(pos.json.offset, 0, "nothing was stored");
    const ok = await raw("POST", "/v1/publish", [auth, "Idempotency-Key: k1"], body);
    assert.equal(ok.status, 200, ok.body);
  });

  test("GET /v1/channels/{name}: two Authorization; without a key the message names the read route", { timeout: TEST_TIMEOUT }, async () => {
    refused(await raw("GET", "/v1/channels/stream:1", [`Authorization: Bearer ${s.apiKey}`, "Authorization: Bearer wrong"]), "Authorization", "two Authorization");
    const none = await raw("GET", "/v1/channels/stream:1", []);
    assertError(none, 401, "unauthorized", "no API key");
    // Was: "publishing needs Authorization: Bearer <API key>" on this read route.
    assert.equal(none.json.error.message, "reading a channel's position needs Authorization: Bearer <API key>");
  });

  test("server API: two X-API-Key or Authorization, refused in the API's error shape", { timeout: TEST_TIMEOUT }, async () => {
    const body = JSON.stringify({ channel: "stream:rep-api", data: { n: 1 } });
    for (const [what, lines] of [
      ["two X-API-Key", [`X-API-Key: ${s.apiKey}`, "X-API-Key: wrong"]],
      ["two Authorization", [`Authorization: apikey ${s.apiKey}`, "Authorization: apikey wrong"]],
    ]) {
      const r = await raw("POST", "/api/publish", lines, body);
      assert.equal(r.status, 400, `${what}: ${r.body}`);
      assert.equal(typeof r.json?.error?.code, "number", `${what}: Centrifugo shape: ${r.body}`);
      assert.ok(r.json.error.message.includes(what.slice(4)), `${what}: names it: ${r.json.error.message}`);
    }
    const ok = await raw("POST", "/api/publish", [`X-API-Key: ${s.apiKey}`], body);
    assert.equal(ok.status, 200, ok.body);
  });

  test("issue 39: the server API refuses an unknown field by name (was: ignored)", { timeout: TEST_TIMEOUT }, async () => {
    const key = [`X-API-Key: ${s.apiKey}`];
    for (const [route, body, field] of [
      ["/api/publish", { channel: "stream:api-typo", data: 1, verison: 5 }, "verison"],
      ["/api/publish", { channel: "stream:api-typo", data: 1, tag: { event: "x" } }, "tag"],
      ["/api/broadcast", { channels: ["stream:api-typo"], data: 1, idempotencykey: "k" }, "idempotencykey"],
      ["/api/history", { channel: "stream:api-typo", limt: 5 }, "limt"],
    ]) {
      const r = await raw("POST", route, key, JSON.stringify(body));
      assert.equal(r.status, 400, `${route} ${field}: ${r.body}`);
      assert.equal(r.json?.error?.code, 107, `${route} ${field}: ${r.body}`);
      assert.ok(r.json.error.message.startsWith(`unknown field "${field}"`), `${route}: ${r.json.error.message}`);
    }
    // Centrifugo's own fields still pass, and nothing of the above was published.
    const r = await raw("POST", "/api/publish", key, JSON.stringify({ channel: "stream:api-typo", data: 1, delta: false, skip_history: false }));
    assert.equal(r.status, 200, r.body);
    assert.equal(r.json.result.offset, 1, r.body);
  });
});

describe("--request-timeout=1", () => {
  const h = suiteHerald(["--request-timeout=1"]);

  test("connections that do not finish their request are closed in ~1 s; others are served", { timeout: TEST_TIMEOUT }, async () => {
    const cases = [
      ["nothing sent", ""],
      ["a partial head", "GET /healthz HTTP/1.1\r\nHost: x\r\n"],
      ["a partial body", 'POST /v1/publish HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"channel":'],
      ["idle after a full request (keep-alive)", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"],
    ];
    await Promise.all(
      cases.map(async ([name, bytes]) => {
        const started = Date.now();
        const out = await rawExchange(h.port, bytes, 5000);
        const took = Date.now() - started;
        assert.ok(took >= 900 && took < 3000, `${name}: closed after ${took} ms`);
        if (name.startsWith("idle")) assert.match(out, /^HTTP\/1\.1 200 /, `${name}: answered first`);
        else assert.ok(!/^HTTP\/1\.1 2/.test(out), `${name}: no success reply: ${out.slice(0, 100)}`);
      }),
    );
    const r = await publish(h.url, { channel: "stream:timeout", event: "e", data: 1 });
    assert.equal(r.status, 200);
  });
});

describe("concurrent publishing with subscribers reconnecting mid-way", () => {
  const closers = [];
  const h = suiteHerald(["--history-size=1024"], {
    beforeStop: async () => {
      await Promise.all(closers.map((f) => f().catch(() => {})));
    },
  });

  test("4 publishers x 200: every subscriber gets offsets 1..800 exactly once, in order", { timeout: 45_000 }, async () => {
    const channel = "stream:pub-concurrent";
    const PUBLISHERS = 4;
    const PER = 200;
    const TOTAL = PUBLISHERS * PER;
    const hash = channelHash(channel);

    // A steady WebSocket subscriber: subscribed before any publication.
    const steadyWs = await wsConnect(h.url);
    closers.push(() => steadyWs.close());
    const sub = await wsSubscribe(steadyWs, channel);
    assert.equal(sub.offset, 0);
    const epoch = sub.epoch;
    const start = makeCursor([{ hash, epoch, offset: 0 }]);

    // SSE subscribers start from the cursor {epoch, 0}: nothing can be missed.
    const sseUrl = `${h.url}/v1/sse?channel=${channel}`;
    const steadySse = sseCurl(sseUrl, { "Last-Event-ID": start });
    closers.push(() => steadySse.close());

    // Reconnecting SSE subscriber: events of all its connections.
    const sseEvents = [];
    const sseReconnects = [];
    let sseConn = sseCurl(sseUrl, { "Last-Event-ID": start });
    closers.push(() => sseConn.close());
    let sseSeen = 0;
    const sseStep = async () => {
      // Move the newly parsed events of the current connection into sseEvents.
      const items = sseConn.events.items;
      // herald.cursor (a connection's first event when it has nothing to replay) is no publication.
      while (sseSeen < items.length) {
        const e = items[sseSeen++];
        if (e.event !== "herald.cursor") sseEvents.push(e);
      }
    };

    // Reconnecting WebSocket subscriber.
    const wsPubs = [];
    const wsReconnects = [];
    let wsConn = await wsConnect(h.url);
    closers.push(() => wsConn.close());
    await wsSubscribe(wsConn, channel, { since: { epoch, offset: 0 } });
    let wsSeen = 0;
    const wsStep = () => {
      const items = wsConn.inbox.items;
      for (; wsSeen < items.length; wsSeen++) if (items[wsSeen].op === "publication") wsPubs.push(items[wsSeen]);
    };
    await steadySse.status;
    await sseConn.status;

    // Publishers.
    let published = 0;
    const replies = new Map(); // offset -> {p, seq}
    const publisher = async (p) => {
      for (let seq = 0; seq < PER; seq++) {
        const offsets = await publishOk(h.url, { channel, event: `pub${p}`, data: { p, seq } });
        replies.set(offsets[channel], { p, seq });
        published++;
      }
    };
    const publishing = Promise.all(Array.from({ length: PUBLISHERS }, (_, p) => publisher(p)));

    // Reconnect each of the two subscribers twice, while publishing goes on.
    const reconnector = (async () => {
      for (const threshold of [150, 450]) {
        await waitUntil(
          () => {
            sseStep();
            return sseEvents.length >= threshold;
          },
          { timeoutMs: 15_000, intervalMs: 2, what: `SSE at ${threshold}` },
        );
        await sseConn.close();
        sseStep();
        const lastId = sseEvents.at(-1).id;
        sseReconnects.push({ at: cursorPosition(lastId, channel).offset, published });
        sseConn = sseCurl(sseUrl, { "Last-Event-ID": lastId });
        sseSeen = 0;
        closers.push(() => sseConn.close());

        await waitUntil(
          () => {
            wsStep();
            return wsPubs.length >= threshold + 100;
          },
          { timeoutMs: 15_000, intervalMs: 2, what: `WS at ${threshold + 100}` },
        );
        const old = wsConn;
        old.ws.terminate(); // drop without a close handshake, like a lost network
        wsStep();
        const lastOffset = wsPubs.at(-1).offset;
        wsConn = await wsConnect(h.url);
        wsSeen = 0;
        closers.push(() => wsConn.close());
        const again = await wsSubscribe(wsConn, channel, { since: { epoch, offset: lastOffset } });
        wsReconnects.push({ at: lastOffset, published, recovered: again.recovered, offset: again.offset });
        assert.equal(again.recovered, true, JSON.stringify(again));
        assert.equal(again.epoch, epoch);
      }
    })();

    await Promise.all([publishing, reconnector]);
    assert.equal(replies.size, TOTAL, "every publish got its own offset");
    assert.deepEqual(
      [...replies.keys()].sort((x, y) => x - y),
      Array.from({ length: TOTAL }, (_, i) => i + 1),
    );

    const sseOffsets = () => sseEvents.map((e) => cursorPosition(e.id, channel).offset);
    await waitUntil(
      () => {
        sseStep();
        wsStep();
        return (
          sseEvents.length >= TOTAL &&
          wsPubs.length >= TOTAL &&
          steadySse.events.items.filter((e) => e.event !== "herald.cursor").length >= TOTAL &&
          steadyWs.inbox.items.filter((m) => m.op === "publication").length >= TOTAL
        );
      },
      { timeoutMs: 15_000, what: `all subscribers at ${TOTAL}` },
    );
    await sleep(200);
    sseStep();
    wsStep();

    const expected = Array.from({ length: TOTAL }, (_, i) => i + 1);
    const check = (name, list) => {
      // list: [{offset, event, data}] in arrival order
      assert.deepEqual(list.map((x) => x.offset), expected, `${name}: offsets 1..${TOTAL} once each, in order`);
      for (const x of list) {
        const want = replies.get(x.offset);
        assert.equal(x.event, `pub${want.p}`, `${name}: offset ${x.offset} event`);
        assert.deepEqual(x.data, want, `${name}: offset ${x.offset} data`);
      }
    };
    check(
      "steady SSE",
      steadySse.events.items
        .filter((e) => e.event !== "herald.cursor")
        .map((e) => ({ offset: cursorPosition(e.id, channel).offset, event: e.event, data: JSON.parse(e.data) })),
    );
    check(
      "reconnecting SSE",
      sseEvents.map((e) => ({ offset: cursorPosition(e.id, channel).offset, event: e.event, data: JSON.parse(e.data) })),
    );
    check("steady WS", steadyWs.inbox.items.filter((m) => m.op === "publication"));
    check("reconnecting WS", wsPubs);
    assert.ok(
      steadySse.events.items.every((e) => e.event !== "herald.gap") && sseEvents.every((e) => e.event !== "herald.gap"),
      "no gap event",
    );
    assert.equal(sseOffsets().length, TOTAL);

    // The reconnections really happened while publishing went on.
    for (const r of [...sseReconnects, ...wsReconnects]) {
      assert.ok(r.published < TOTAL, `a reconnection happened mid-way: ${JSON.stringify(r)}`);
    }
  });
  test("an SSE subscriber on two channels reconnecting every ~30 ms with Last-Event-ID misses nothing", { timeout: 45_000 }, async (t) => {
    const A = "stream:pub-multi-a";
    const B = "stream:pub-multi-b";
    const keep = await wsConnect(h.url); // holds both channels (their epochs) from offset 0
    closers.push(() => keep.close());
    const sa = await wsSubscribe(keep, A);
    const sb = await wsSubscribe(keep, B);
    const start = makeCursor([
      { channel: A, epoch: sa.epoch, offset: 0 },
      { channel: B, epoch: sb.epoch, offset: 0 },
    ]);
    const url = `${h.url}/v1/sse?channel=${A}&channel=${B}`;
    let conn = sseCurl(url, { "Last-Event-ID": start });
    closers.push(() => conn.close());
    const all = [];
    let seen = 0;
    let reconnects = 0;
    const step = () => {
      const items = conn.events.items;
      while (seen < items.length) all.push(items[seen++]);
    };
    let done = false;
    const publishing = Promise.all(
      [A, B, A, B].map(async (channel, p) => {
        for (let i = 0; i < 200; i++) await publishOk(h.url, { channel, event: "e", data: { p, i } });
      }),
    ).finally(() => (done = true)); // a failed publish ends the loop too (then rejects below)
    while (!done) {
      await sleep(30);
      step();
      if (all.length === 0) continue;
      await conn.close();
      step();
      conn = sseCurl(url, { "Last-Event-ID": all.at(-1).id });
      seen = 0;
      reconnects++;
      closers.push(() => conn.close());
    }
    await publishing;
    await waitUntil(
      () => {
        step();
        const last = all.at(-1);
        return last && cursorPosition(last.id, A).offset === 400 && cursorPosition(last.id, B).offset === 400;
      },
      { timeoutMs: 15_000, what: "both channels at offset 400" },
    );
    await sleep(200);
    step();
    t.diagnostic(`${reconnects} reconnections, ${all.length} events`);
    assert.ok(reconnects >= 5, `reconnected ${reconnects} times`);
    const per = { [A]: [], [B]: [] };
    let prev = start;
    for (const e of all) {
      assert.notEqual(e.event, "herald.gap", `no gap: ${e.data}`);
      if (e.event === "herald.cursor") {
        // A reconnect with nothing to replay: the cursor is restated, unchanged.
        assert.equal(e.id, prev, "herald.cursor repeats the position the client resumed from");
        continue;
      }
      const ch = channelOfEvent(prev, e.id, [A, B]);
      assert.ok(ch, `event id ${e.id} advances exactly one channel from ${prev}`);
      per[ch].push(cursorPosition(e.id, ch).offset);
      prev = e.id;
    }
    const expected = Array.from({ length: 400 }, (_, i) => i + 1);
    assert.deepEqual(per[A], expected, "channel A: 1..400 once each, in order");
    assert.deepEqual(per[B], expected, "channel B: 1..400 once each, in order");
  });
});
