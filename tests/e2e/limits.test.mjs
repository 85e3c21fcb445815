// Abuse limits (issue #4, docs/protocol.md "Limits"): each limit with its exact
// status or close code, and a check that another client kept receiving while
// the offender was refused. Real herald processes, raw sockets where a real
// client would not misbehave on purpose.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import net from "node:net";
import { after, describe, test } from "node:test";
import zlib from "node:zlib";

import { awaitBackgroundStops, publishOk, sleep, suiteHerald } from "./lib/herald.mjs";
import { encodeFrame, rawWsConnect, suiteWithBystander, wsConnect, wsSubscribe } from "./lib/ws.mjs";

const TEST_TIMEOUT = 30_000;

after(awaitBackgroundStops);

/**
 * Opens a TCP connection to 127.0.0.1:`port` (from `localAddress`), writes
 * `request` (string or array of [delayMs, chunk] steps) and collects the
 * answer until the server closes or `timeoutMs` passes.
 * @returns {Promise<{text:string, status:number|null, json:any, ended:string, ms:number}>}
 */
async function rawHttp(port, request, { localAddress, timeoutMs = 8000 } = {}) {
  const started = Date.now();
  const socket = net.connect({ host: "127.0.0.1", port, localAddress });
  let text = "";
  socket.on("data", (c) => (text += c.toString("latin1")));
  const ended = new Promise((resolve) => {
    socket.on("end", () => resolve("end"));
    socket.on("close", () => resolve("close"));
    socket.on("error", (e) => resolve(e.code || String(e)));
  });
  await new Promise((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  let done = false;
  ended.then(() => (done = true));
  if (typeof request === "string") {
    socket.write(request);
  } else {
    for (const [delay, chunk] of request) {
      if (delay) await sleep(delay);
      if (done) break;
      socket.write(chunk);
    }
  }
  const timer = setTimeout(() => socket.destroy(), timeoutMs);
  const how = await ended;
  clearTimeout(timer);
  const status = /^HTTP\/1\.1 (\d{3}) /.exec(text);
  const body = text.split("\r\n\r\n").slice(1).join("\r\n\r\n");
  let json = null;
  try {
    json = JSON.parse(body);
  } catch {
    // not JSON
  }
  return { text, status: status ? Number(status[1]) : null, json, ended: how, ms: Date.now() - started };
}

describe("HTTP request head limits", () => {
  const { h, bystander, stillReceives } = suiteWithBystander(
    ["--max-header-count=20", "--max-header-bytes=2048", "--header-timeout=1", "--request-timeout=10"],
    "stream:head-bystander",
  );

  const head = (n) => {
    let s = `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n`;
    for (let i = 1; i < n; i++) s += `X-H${i}: v\r\n`;
    return s + "\r\n";
  };

  test("more header fields than --max-header-count: 431 headers_too_large", { timeout: TEST_TIMEOUT }, async () => {
    const ok = await rawHttp(h.port, head(20).replace("HTTP/1.1\r\n", "HTTP/1.1\r\nConnection: close\r\n").replace("X-H19: v\r\n", ""));
    assert.equal(ok.status, 200, ok.text);
    const bad = await rawHttp(h.port, head(21));
    assert.equal(bad.status, 431, bad.text);
    assert.equal(bad.json.error.code, "headers_too_large");
    assert.match(bad.json.error.message, /more than 20 header fields/);
    assert.match(bad.text, /content-type: application\/json/i);
    await stillReceives();
  });

  test("request head over --max-header-bytes: 431 headers_too_large", { timeout: TEST_TIMEOUT }, async () => {
    const bad = await rawHttp(h.port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(3000)}\r\n\r\n`);
    assert.equal(bad.status, 431, bad.text);
    assert.equal(bad.json.error.code, "headers_too_large");
    await stillReceives();
  });

  test("slow headers: 408 header_timeout after --header-timeout, before --request-timeout", { timeout: TEST_TIMEOUT }, async () => {
    // One header line every 300 ms, never the blank line: a slowloris client.
    const steps = [[0, "GET /healthz HTTP/1.1\r\nHost: x\r\n"]];
    for (let i = 0; i < 30; i++) steps.push([300, `X-Slow-${i}: 1\r\n`]);
    const [slow] = await Promise.all([
      rawHttp(h.port, steps),
      // Meanwhile the bystander receives (the server is not stuck on the slow client).
      (async () => {
        await sleep(300);
        await stillReceives();
      })(),
    ]);
    assert.equal(slow.status, 408, slow.text);
    assert.equal(slow.json.error.code, "header_timeout");
    assert.ok(slow.ms >= 900 && slow.ms < 5000, `answered after ${slow.ms} ms`);
    assert.match(slow.text, /connection: close/i);
  });

  test("a connection that sends nothing is closed after --header-timeout without an answer", { timeout: TEST_TIMEOUT }, async () => {
    const idle = await rawHttp(h.port, "");
    assert.equal(idle.text, "");
    assert.ok(idle.ms >= 900 && idle.ms < 5000, `closed after ${idle.ms} ms`);
    await stillReceives();
  });

  // Request smuggling: framing a proxy could read differently is refused
  // with 400 and the connection closed, so a request hidden after the body
  // never runs (RFC 9112 section 6). Found by a tester: `chunked, chunked`
  // with Content-Length used to run the hidden request.
  for (const [name, te, withLength] of [
    ["chunked, chunked + Content-Length", "chunked, chunked", true],
    ["xchunked + Content-Length", "xchunked", true],
    ["identity, chunked body", "identity", false],
    ["gzip, chunked body", "gzip", false],
    ["two Transfer-Encoding fields", "chunked\r\nTransfer-Encoding: chunked", false],
  ]) {
    test(`ambiguous framing (${name}): 400, closed, the hidden request never runs`, { timeout: TEST_TIMEOUT }, async () => {
      const body = JSON.stringify({ channel: "stream:head-bystander", event: "smuggle", data: 1 });
      const chunked = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
      const hidden = "GET /nonexistent-smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
      const res = await rawHttp(
        h.port,
        `POST /v1/publish HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ${te}\r\n` +
          (withLength ? `Content-Length: ${body.length}\r\n` : "") +
          `\r\n${withLength ? body : chunked}${hidden}`,
      );
      assert.equal(res.status, 400, res.text);
      assert.equal(res.json.error.code, "invalid_request");
      assert.match(res.json.error.message, /Transfer-Encoding/);
      assert.equal((res.text.match(/HTTP\/1\.1 /g) || []).length, 1, `one answer only: ${res.text}`);
      assert.ok(!res.text.includes("404"), res.text);
      assert.ok(["end", "close", "ECONNRESET"].includes(res.ended), `ended: ${res.ended}`);
      // The publish did not happen either: a later publication on the same
      // channel (kept in order per channel) arrives, the smuggled one before it did not.
      await stillReceives();
      assert.ok(!bystander().inbox.items.some((m) => m.op === "publication" && m.event === "smuggle"));
    });
  }

  test("plain chunked publishing still works", { timeout: TEST_TIMEOUT }, async () => {
    const body = JSON.stringify({ channel: "stream:head-bystander", event: "chunkedok", data: 1 });
    const res = await rawHttp(
      h.port,
      `POST /v1/publish HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n` +
        `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    );
    assert.equal(res.status, 200, res.text);
    await bystander().inbox.until((items) => items.some((m) => m.op === "publication" && m.event === "chunkedok"), { what: "chunkedok" });
  });

  test("a slow body is governed by --request-timeout, not --header-timeout", { timeout: TEST_TIMEOUT }, async () => {
    const body = JSON.stringify({ channel: "stream:head-bystander", event: "slowbody", data: 1 });
    const res = await rawHttp(h.port, [
      [0, `POST /v1/publish HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n`],
      [1500, body],
    ]);
    assert.equal(res.status, 200, res.text);
    await bystander().inbox.until((items) => items.some((m) => m.op === "publication" && m.event === "slowbody"), { what: "slowbody" });
  });
});

describe("WebSocket message size and compression", () => {
  const MAX = 1000;
  const { h, stillReceives } = suiteWithBystander([`--max-ws-message-bytes=${MAX}`], "stream:frag-bystander");

  test("raw continuation frames counted across fragments: close 1009", { timeout: TEST_TIMEOUT }, async () => {
    const r = await rawWsConnect(h.port);
    // Every fragment is small; together they pass the limit.
    r.sendFrame({ opcode: 1, fin: false, payload: '{"op":"ping","id":1,"pad":"' + "x".repeat(300) });
    r.sendFrame({ opcode: 0, fin: false, payload: "x".repeat(400) });
    r.sendFrame({ opcode: 0, fin: false, payload: "x".repeat(400) });
    r.sendFrame({ opcode: 0, fin: true, payload: '"}' });
    const { code } = await r.closeCode();
    assert.equal(code, 1009);
    r.destroy();
    await stillReceives();
  });

  test("raw continuation frames under the limit form one command", { timeout: TEST_TIMEOUT }, async () => {
    const r = await rawWsConnect(h.port);
    r.sendFrame({ opcode: 1, fin: false, payload: '{"op":"ping",' });
    // Padded with JSON whitespace (a field the command does not have is refused).
    r.sendFrame({ opcode: 0, fin: false, payload: '"id":5' + " ".repeat(400) });
    r.sendFrame({ opcode: 0, fin: true, payload: "}" });
    const pong = await r.frames.until((items) => items.find((f) => f.json?.op === "pong"), { what: "pong" });
    assert.equal(pong.json.id, 5);
    r.destroy();
  });

  test("permessage-deflate: the cap applies to the inflated message (1009), RSV1 without the extension is 1002", { timeout: TEST_TIMEOUT }, async () => {
    // RFC 7692 section 7.2.1: raw DEFLATE, sync-flushed, the 0x00 0x00 0xff 0xff tail removed.
    const compress = (text) => {
      const out = zlib.deflateRawSync(Buffer.from(text), { finishFlush: zlib.constants.Z_SYNC_FLUSH });
      return out.subarray(0, out.length - 4);
    };
    const offer = "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n";
    const ok = await rawWsConnect(h.port, { headers: offer });
    assert.match(ok.head, /sec-websocket-extensions: permessage-deflate/i);
    // Under the cap once inflated: answered.
    ok.sendFrame({ opcode: 1, rsv: 4, payload: compress('{"op":"ping","id":6' + " ".repeat(MAX - 100) + "}") });
    const pong = await ok.frames.until((items) => items.find((f) => f.json?.op === "pong"), { what: "pong" });
    assert.equal(pong.json.id, 6);
    // 50 times the cap once inflated, a few dozen bytes on the wire: 1009.
    ok.sendFrame({ opcode: 1, rsv: 4, payload: compress(JSON.stringify({ op: "ping", pad: " ".repeat(50 * MAX) })) });
    assert.equal((await ok.closeCode()).code, 1009);
    ok.destroy();
    // A compressed (RSV1) frame where the extension was not negotiated.
    const r = await rawWsConnect(h.port);
    assert.doesNotMatch(r.head, /sec-websocket-extensions/i);
    r.sendFrame({ opcode: 1, rsv: 4, payload: crypto.randomBytes(20) });
    const { code } = await r.closeCode();
    assert.equal(code, 1002);
    r.destroy();
    await stillReceives();
  });
});

describe("WebSocket commands per second", () => {
  const BURST = 10;
  // 1 per second: the refill during one test burst is negligible even under sanitizers.
  const { h, stillReceives } = suiteWithBystander(["--ws-commands-per-second=1", `--ws-commands-burst=${BURST}`], "stream:rate-bystander");

  test("over the bucket: rate_limited errors, commands dropped, then allowed again", { timeout: TEST_TIMEOUT }, async () => {
    const c = await wsConnect(h.url);
    for (let i = 1; i <= BURST + 3; i++) c.send({ op: "ping", id: i });
    const got = await c.inbox.until(
      (items) => (items.filter((m) => m.op === "pong" || m.op === "error").length >= BURST + 3 ? items : null),
      { what: "answers to every ping" },
    );
    const pongs = got.filter((m) => m.op === "pong");
    const errors = got.filter((m) => m.op === "error");
    assert.ok(pongs.length >= BURST && pongs.length <= BURST + 1, `${pongs.length} pongs`);
    assert.equal(pongs.length + errors.length, BURST + 3);
    for (const e of errors) assert.equal(e.code, "rate_limited");
    await stillReceives();
    // The bucket refills: after a pause a command goes through again.
    await sleep(1500);
    assert.deepEqual(await c.request({ op: "ping", id: "again" }), { op: "pong", id: "again" });
    await c.close();
  });

  test(`--ws-commands-burst refused commands in a row: close 1008`, { timeout: TEST_TIMEOUT }, async () => {
    const c = await wsConnect(h.url);
    for (let i = 1; i <= 3 * BURST; i++) c.send({ op: "ping", id: i });
    const { code, reason } = await c.closed;
    assert.equal(code, 1008);
    assert.equal(reason, "rate limited");
    assert.ok(c.inbox.items.some((m) => m.op === "error" && m.code === "rate_limited"));
    await stillReceives();
  });
});

describe("connections per client address", () => {
  const MAX = 3;
  const h = suiteHerald([`--max-connections-per-ip=${MAX}`]);

  /** An open SSE stream from `localAddress` (resolves once its head arrived). */
  async function sseFrom(localAddress, channel) {
    const socket = net.connect({ host: "127.0.0.1", port: h.port, localAddress });
    socket.on("error", () => {});
    let text = "";
    socket.on("data", (c) => (text += c.toString("latin1")));
    socket.write(`GET /v1/sse?channel=${channel} HTTP/1.1\r\nHost: x\r\n\r\n`);
    const deadline = Date.now() + 5000;
    while (!/\r\n\r\n/.test(text)) {
      if (Date.now() > deadline) throw new Error(`no SSE head from ${localAddress}: ${text}`);
      await sleep(10);
    }
    return { socket, text: () => text };
  }

  test(`the ${MAX + 1}th connection from one address: 429 too_many_connections; other addresses unaffected`, { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:per-ip";
    // A subscriber from another address that must keep receiving.
    const watcher = await sseFrom("127.0.0.1", channel);
    const held = [];
    for (let i = 0; i < MAX; i++) held.push(await sseFrom("127.0.0.2", channel));
    for (const s of held) assert.match(s.text(), /^HTTP\/1\.1 200 /);

    const refused = await rawHttp(h.port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", { localAddress: "127.0.0.2" });
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.json.error.code, "too_many_connections");
    assert.match(refused.json.error.message, new RegExp(`at most ${MAX} connections`));

    // Another address is not affected, and the watcher keeps receiving.
    const third = await rawHttp(h.port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", { localAddress: "127.0.0.3" });
    assert.equal(third.status, 200, third.text);
    await publishOk(h.url, { channel, event: "still", data: 1 });
    for (const s of [watcher, ...held]) {
      const deadline = Date.now() + 5000;
      while (!/event: still/.test(s.text())) {
        if (Date.now() > deadline) throw new Error("a held subscriber missed the publication");
        await sleep(10);
      }
    }

    // A closed connection gives its slot back.
    held.pop().socket.destroy();
    let again;
    const deadline = Date.now() + 5000;
    do {
      await sleep(50);
      again = await rawHttp(h.port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", { localAddress: "127.0.0.2" });
    } while (again.status !== 200 && Date.now() < deadline);
    assert.equal(again.status, 200, again.text);
    for (const s of [watcher, ...held]) s.socket.destroy();
  });
});

describe("subscribe attempts per WebSocket connection", () => {
  const MAX = 5;
  const { h, stillReceives } = suiteWithBystander([`--max-subscribe-attempts=${MAX}`], "stream:subs-bystander");

  test("refused and accepted subscribes both count; one more: too_many_subscribes and close 1008", { timeout: TEST_TIMEOUT }, async () => {
    const c = await wsConnect(h.url);
    assert.equal((await wsSubscribe(c, "stream:a")).op, "subscribed");
    assert.equal((await wsSubscribe(c, "stream:b")).op, "subscribed");
    assert.equal((await wsSubscribe(c, "user:nope")).code, "invalid_channel");
    assert.equal((await wsSubscribe(c, "stream:a")).code, "already_subscribed");
    // Unsubscribing does not give attempts back.
    assert.equal((await c.request({ op: "unsubscribe", channel: "stream:b" })).op, "unsubscribed");
    assert.equal((await wsSubscribe(c, "stream:b")).op, "subscribed");
    const over = await wsSubscribe(c, "stream:c");
    assert.equal(over.op, "error");
    assert.equal(over.code, "too_many_subscribes");
    const { code } = await c.closed;
    assert.equal(code, 1008);
    await stillReceives();
    // Other commands do not count.
    const d = await wsConnect(h.url);
    for (let i = 0; i < 20; i++) assert.equal((await d.request({ op: "ping" })).op, "pong");
    assert.equal((await wsSubscribe(d, "stream:d")).op, "subscribed");
    await d.close();
  });
});
