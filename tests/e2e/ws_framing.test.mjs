// The open WebSocket connection's framing (RFC 6455), which Herald writes and
// parses itself after Beast's handshake (net/wire/ws/frame_codec, net/ws/ws_session):
// raw clients send frames byte by byte, split, fragmented, with control frames
// in between, and break each rule; the `ws` package checks what Herald writes
// (a publication frame shared by many subscribers, large payloads, many frames
// in one gathered write). Malformed upgrades get JSON errors (net/wire/ws/upgrade).
// A bystander must keep receiving through all of it.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import http from "node:http";
import net from "node:net";
import { after, describe, test } from "node:test";

import { awaitBackgroundStops, publishOk, suiteHerald } from "./lib/herald.mjs";
import { encodeFrame, publicationsOf, suiteWithBystander, wsConnect, wsSubscribe } from "./lib/ws.mjs";

const TEST_TIMEOUT = 20_000;
const MAX_MESSAGE = 4096;

after(() => awaitBackgroundStops());

describe("WebSocket framing", () => {
  const { h, raw, stillReceives } = suiteWithBystander(
    [`--max-ws-message-bytes=${MAX_MESSAGE}`, "--io-threads=2", "--max-publish-bytes=200000"],
    "stream:framing-bystander",
  );

  test("a malformed upgrade gets a JSON error, never Beast's plain text (426 names version 13)", { timeout: TEST_TIMEOUT }, async () => {
    const key = crypto.randomBytes(16).toString("base64");
    const upgrade = (path, headers) =>
      new Promise((resolve, reject) => {
        const req = http.get({
          host: "127.0.0.1",
          port: h.port,
          path,
          headers: { Connection: "Upgrade", Upgrade: "websocket", ...headers },
        });
        req.on("upgrade", (res, socket) => {
          socket.destroy();
          reject(new Error(`upgraded: ${res.statusCode}`));
        });
        req.on("response", (res) => {
          let body = "";
          res.on("data", (c) => (body += c));
          res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body }));
        });
        req.on("error", reject);
      });
    for (const path of ["/v1/ws", "/connection/websocket"]) {
      for (const [headers, status, code] of [
        [{ "Sec-WebSocket-Version": "8", "Sec-WebSocket-Key": key }, 426, "upgrade_required"],
        [{ "Sec-WebSocket-Key": key }, 426, "upgrade_required"],
        [{ "Sec-WebSocket-Version": "13" }, 400, "invalid_request"],
        [{ "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "short" }, 400, "invalid_request"],
      ]) {
        const r = await upgrade(path, headers);
        const what = `${path} ${JSON.stringify(headers)}: ${r.status} ${r.body}`;
        assert.equal(r.status, status, what);
        assert.match(r.headers["content-type"], /application\/json/, what);
        assert.equal(JSON.parse(r.body).error.code, code, what);
        if (status === 426) assert.equal(r.headers["sec-websocket-version"], "13", what);
      }
    }
    // No Host (RFC 6455 section 4.1 item 3): 400, never a 101 (node's http
    // client always sends one, so this request is written by hand).
    for (const path of ["/v1/ws", "/connection/websocket"]) {
      const answer = await new Promise((resolve, reject) => {
        const s = net.connect({ host: "127.0.0.1", port: h.port }, () =>
          s.write(`GET ${path} HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
                  `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${key}\r\n\r\n`));
        let got = "";
        s.on("data", (c) => (got += c));
        s.on("end", () => resolve(got));
        s.on("close", () => resolve(got));
        s.on("error", reject);
      });
      assert.match(answer, /^HTTP\/1\.1 400 /, `${path} without Host: ${answer}`);
      assert.match(answer, /"invalid_request"/, answer);
      assert.match(answer, /Host header/, answer);
    }
    await stillReceives(); // other clients unaffected
  });

  test("a command sent one byte per write is parsed and answered", { timeout: TEST_TIMEOUT }, async () => {
    const r = await raw();
    const bytes = encodeFrame({ opcode: 1, payload: JSON.stringify({ op: "ping", id: "slow" }) });
    for (const b of bytes) {
      r.write(Buffer.from([b]));
      await new Promise((res) => setTimeout(res, 2));
    }
    const pong = await r.frames.until((items) => items.find((f) => f.json?.op === "pong"), { what: "pong" });
    assert.equal(pong.json.id, "slow");
    assert.equal(pong.masked, false, "server frames are never masked");
  });

  test("several commands in one write, a fragmented one with a ping between its fragments", { timeout: TEST_TIMEOUT }, async () => {
    const r = await raw();
    const text = JSON.stringify({ op: "ping", id: "frag" });
    r.write(
      Buffer.concat([
        encodeFrame({ opcode: 1, payload: JSON.stringify({ op: "ping", id: 1 }) }),
        encodeFrame({ opcode: 1, fin: false, payload: Buffer.from(text.slice(0, 5)) }),
        encodeFrame({ opcode: 9, payload: Buffer.from("are you there") }),
        encodeFrame({ opcode: 0, fin: false, payload: Buffer.from(text.slice(5, 12)) }),
        encodeFrame({ opcode: 0, payload: Buffer.from(text.slice(12)) }),
        encodeFrame({ opcode: 1, payload: JSON.stringify({ op: "ping", id: 2 }) }),
      ]),
    );
    await r.frames.until((items) => (items.filter((f) => f.json?.op === "pong").length >= 3 ? true : null), { what: "3 pongs" });
    const ids = r.frames.items.filter((f) => f.json?.op === "pong").map((f) => f.json.id);
    assert.deepEqual(ids, [1, "frag", 2]);
    const pong = r.frames.items.find((f) => f.opcode === 10);
    assert.ok(pong, "a protocol pong answers the ping");
    assert.equal(pong.payload.toString(), "are you there");
  });

  for (const [name, frame, code] of [
    ["invalid UTF-8 in a text message", { opcode: 1, payload: Buffer.from([0x7b, 0xc3, 0x28, 0x7d]) }, 1007],
    ["an unmasked client frame", { opcode: 1, mask: false, payload: Buffer.from("{}") }, 1002],
    ["a reserved opcode", { opcode: 3, payload: Buffer.from("x") }, 1002],
    ["a continuation without a message", { opcode: 0, payload: Buffer.from("x") }, 1002],
    ["a fragmented ping", { opcode: 9, fin: false, payload: Buffer.from("x") }, 1002],
    ["a close frame with a 1-byte payload", { opcode: 8, payload: Buffer.from([3]) }, 1002],
    ["a close frame with code 1005", { opcode: 8, payload: Buffer.from([0x03, 0xed]) }, 1002],
    ["a message over --max-ws-message-bytes announced by its header", { opcode: 1, payload: Buffer.alloc(10), declaredLength: MAX_MESSAGE + 1 }, 1009],
  ]) {
    test(`${name}: close ${code}, then the connection ends`, { timeout: TEST_TIMEOUT }, async () => {
      const r = await raw();
      r.sendFrame(frame);
      const { code: got, ended } = await r.closeCode();
      assert.equal(got, code);
      await r.ended;
      assert.ok(ended === null || typeof ended === "string");
      await stillReceives();
    });
  }

  test("the client's close is echoed with its code and the server ends the connection", { timeout: TEST_TIMEOUT }, async () => {
    const r = await raw();
    const payload = Buffer.concat([Buffer.from([0x0f, 0xa0]), Buffer.from("bye")]); // 4000 "bye"
    r.sendFrame({ opcode: 8, payload });
    const { code } = await r.closeCode();
    assert.equal(code, 4000);
    assert.ok(["end", "close"].includes(await r.ended));
  });

  test("publications: one shared frame per publication, large payloads, bursts written together", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:framing-burst";
    const clients = [];
    for (let i = 0; i < 20; i++) {
      const c = await wsConnect(h.url);
      await wsSubscribe(c, channel);
      clients.push(c);
    }
    // 7-bit, 16-bit and 64-bit payload lengths (RFC 6455 section 5.2).
    const sizes = [10, 200, 30_000, 100_000, 5];
    for (const n of sizes) await publishOk(h.url, { channels: [channel], event: "big", data: { s: "x".repeat(n) } });
    // 200 publishes in flight at once; a refused one fails here, by name.
    await Promise.all(Array.from({ length: 200 }, (_, i) => publishOk(h.url, { channels: [channel], event: "burst", data: { i } })));
    for (const c of clients) {
      const pubs = await c.inbox.until(
        (items) => {
          const p = publicationsOf(c, channel);
          return p.length >= sizes.length + 200 ? p : null;
        },
        { what: "every publication", timeoutMs: 15_000 },
      );
      assert.deepEqual(pubs.map((p) => p.offset), Array.from({ length: sizes.length + 200 }, (_, i) => i + 1));
      assert.deepEqual(pubs.slice(0, sizes.length).map((p) => p.data.s.length), sizes);
    }
    for (const c of clients) await c.close();
    await stillReceives();
  });
});

describe("WebSocket message timeout (--ws-message-timeout)", () => {
  const { h, raw, stillReceives } = suiteWithBystander(["--ws-message-timeout=1", "--ws-ping-interval=60"], "stream:msg-timeout-bystander");

  const cases = [
    ["a fragmented message left open (no last fragment)", async (r) => {
      r.sendFrame({ opcode: 1, fin: false, payload: Buffer.from('{"op":"pi') });
    }],
    ["a fragmented message kept open by pings between its fragments", async (r, until) => {
      r.sendFrame({ opcode: 1, fin: false, payload: Buffer.from('{"op":') });
      while (Date.now() < until) {
        r.sendFrame({ opcode: 9, payload: Buffer.from("still here") });
        r.sendFrame({ opcode: 0, fin: false, payload: Buffer.from(" ") });
        await new Promise((res) => setTimeout(res, 200));
      }
    }],
    ["one frame trickled a byte at a time", async (r, until) => {
      const bytes = encodeFrame({ opcode: 1, payload: Buffer.from(JSON.stringify({ op: "ping", pad: "x".repeat(200) })) });
      for (const b of bytes) {
        if (Date.now() >= until) break;
        r.write(Buffer.from([b]));
        await new Promise((res) => setTimeout(res, 50));
      }
    }],
  ];
  for (const [name, send] of cases) {
    test(`${name}: close 1008 within the bound, others unaffected`, { timeout: TEST_TIMEOUT }, async () => {
      const r = await raw();
      const t0 = Date.now();
      const sending = send(r, t0 + 4000);
      const { code, reason } = await r.closeCode(4000);
      const took = Date.now() - t0;
      assert.equal(code, 1008, `closed ${code} after ${took} ms`);
      assert.match(reason, /message not completed within 1 s/);
      assert.ok(took >= 900 && took < 3000, `closed after ${took} ms`);
      await r.ended;
      await sending;
      await stillReceives();
    });
  }

  test("a message that completes in time is answered, and the bound counts per message", { timeout: TEST_TIMEOUT }, async () => {
    const r = await raw();
    // Three messages, each in two fragments 600 ms apart: 1.8 s in all, each within 1 s.
    for (let i = 0; i < 3; i++) {
      const text = JSON.stringify({ op: "ping", id: i });
      r.sendFrame({ opcode: 1, fin: false, payload: Buffer.from(text.slice(0, 4)) });
      await new Promise((res) => setTimeout(res, 600));
      r.sendFrame({ opcode: 0, payload: Buffer.from(text.slice(4)) });
      await r.frames.until((items) => items.some((f) => f.json?.op === "pong" && f.json.id === i), { what: `pong ${i}` });
    }
    await new Promise((res) => setTimeout(res, 1200)); // idle between messages is not bounded
    r.sendFrame({ opcode: 1, payload: Buffer.from(JSON.stringify({ op: "ping", id: "last" })) });
    await r.frames.until((items) => items.some((f) => f.json?.id === "last"), { what: "the last pong" });
    assert.equal(r.frames.items.filter((f) => f.opcode === 8).length, 0);
  });

  test("a command naming a key twice is refused with invalid_json; the connection stays open", { timeout: TEST_TIMEOUT }, async () => {
    const r = await raw();
    r.sendFrame({ opcode: 1, payload: Buffer.from('{"op":"subscribe","channel":"stream:a","channel":"stream:b","id":1}') });
    const err = await r.frames.until((items) => items.find((f) => f.json?.op === "error"), { what: "an error" });
    assert.equal(err.json.code, "invalid_json");
    assert.match(err.json.message, /duplicate key "channel"/);
    r.sendFrame({ opcode: 1, payload: Buffer.from(JSON.stringify({ op: "ping", id: 2 })) });
    await r.frames.until((items) => items.some((f) => f.json?.op === "pong"), { what: "pong" });
  });
});
