// permessage-deflate (RFC 7692) on both WebSocket endpoints, with the `ws`
// package's own implementation as the client (and the Centrifuge SDK, whose
// `ws` transport offers it by default): negotiated with
// server_no_context_takeover and client_no_context_takeover, publications
// compressed (RSV1) and decoded by the client to the published data, at most
// 45 % of the uncompressed run's bytes on the wire; a client without the
// extension on the same channel gets the same data uncompressed; small
// messages go plain; compressed client commands are inflated; refusals: RSV1
// without the extension (1002), bytes that are not DEFLATE (1007), a message
// that inflates past --max-ws-message-bytes (1009, a deflate bomb), each with
// a bystander still receiving; --ws-deflate-min-bytes=0 turns it off.
// Headless Chromium's own WebSocket (system Chromium through playwright-core,
// as in demo_page.test.mjs) negotiates it and reads compressed publications.
// docs/protocol.md "Compression" is the contract.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import WebSocket from "ws";

import { awaitBackgroundStops, publishOk, sleep, suiteHerald, withHerald } from "./lib/herald.mjs";
import { launchChromium } from "./lib/browser.mjs";
import { ENCODINGS, sdkClient, subscription } from "./lib/centrifuge.mjs";
import { encodeFrame, publicationsOf, rawWsConnect, wsConnect, wsStillReceives, wsSubscribe } from "./lib/ws.mjs";

after(awaitBackgroundStops);

const TEST_TIMEOUT = 30_000;
const MAX_MESSAGE = 65536;

/** A ~2 KiB balance object; `i` changes a few fields. */
function balance(i) {
  const assets = {};
  for (let a = 0; a < 14; a++)
    assets[`ASSET${a}`] = {
      issuer: `G${String(a).padStart(55, "B")}`,
      balance: (1000 + a * 7.25 + (a === i % 14 ? i : 0)).toFixed(7),
      updated_at: "2026-12-07T10:00:00Z",
    };
  return { account: `G${"A".repeat(55)}`, ledger: 1000 + i, assets };
}

/** Bytes received on the client's TCP socket so far. */
const bytesRead = (c) => c.ws._socket.bytesRead;

describe("permessage-deflate on /v1/ws", () => {
  const h = suiteHerald([`--max-ws-message-bytes=${MAX_MESSAGE}`, "--history-size=200"]);

  test("negotiated; 100 publications decoded equal, at most 45 % of the plain client's bytes", { timeout: TEST_TIMEOUT }, async (t) => {
    const channel = "stream:deflate-100";
    const deflate = await wsConnect(h.url, { options: { perMessageDeflate: true } });
    const plain = await wsConnect(h.url);
    try {
      assert.match(deflate.ws.extensions, /^permessage-deflate/);
      // (`ws` names only the extension; its parameters are checked on a raw socket below.)
      assert.equal(plain.ws.extensions, "");
      assert.equal((await wsSubscribe(deflate, channel)).op, "subscribed");
      assert.equal((await wsSubscribe(plain, channel)).op, "subscribed");
      const [d0, p0] = [bytesRead(deflate), bytesRead(plain)];
      const sent = [];
      for (let i = 0; i < 100; i++) {
        sent.push(balance(i));
        await publishOk(h.url, { channel, event: "balance", data: balance(i) });
      }
      await deflate.inbox.until((items) => items.filter((m) => m.op === "publication").length >= 100, { what: "100 compressed" });
      await plain.inbox.until((items) => items.filter((m) => m.op === "publication").length >= 100, { what: "100 plain" });
      await sleep(50);
      assert.deepEqual(publicationsOf(deflate, channel).map((m) => m.data), sent);
      assert.deepEqual(publicationsOf(plain, channel).map((m) => m.data), sent);
      const [d, p] = [bytesRead(deflate) - d0, bytesRead(plain) - p0];
      t.diagnostic(`bytes on the wire: ${d} with deflate, ${p} without (${((100 * d) / p).toFixed(1)} %)`);
      assert.ok(d <= 0.45 * p, `${d} of ${p} bytes`);
    } finally {
      await deflate.close();
      await plain.close();
    }
  });

  test("compressed commands are inflated; small replies go plain (RSV1 clear)", { timeout: TEST_TIMEOUT }, async () => {
    // threshold 0: the `ws` client compresses every message it sends.
    const c = await rawWsConnect(h.port, { headers: "Sec-WebSocket-Extensions: permessage-deflate\r\n" });
    const w = await wsConnect(h.url, { options: { perMessageDeflate: { threshold: 0 } } });
    try {
      assert.match(c.head, /sec-websocket-extensions: permessage-deflate; server_no_context_takeover; client_no_context_takeover/i);
      const r = await w.request({ op: "subscribe", channel: "stream:deflate-cmd" });
      assert.equal(r.op, "subscribed");
      c.sendJson({ op: "ping", id: 1 });
      const pong = await c.frames.until((items) => items.find((f) => f.json?.op === "pong"), { what: "pong" });
      assert.equal(pong.rsv, 0, "a small reply is not compressed");
      await publishOk(h.url, { channel: "stream:deflate-cmd", event: "e", data: { small: true } });
      await w.inbox.until((items) => items.some((m) => m.op === "publication"), { what: "publication" });
    } finally {
      c.destroy();
      await w.close();
    }
  });

  test("RSV1 without the extension 1002, bytes that are not DEFLATE 1007, a deflate bomb 1009; a bystander still receives", { timeout: TEST_TIMEOUT }, async () => {
    const bystander = await wsConnect(h.url, { options: { perMessageDeflate: true } });
    try {
      assert.equal((await wsSubscribe(bystander, "stream:deflate-by")).op, "subscribed");
      // RSV1 on a connection that did not negotiate the extension.
      const noExt = await rawWsConnect(h.port);
      noExt.write(encodeFrame({ opcode: 1, rsv: 4, payload: Buffer.from([0x4b, 0x4c, 0x4a, 0x06, 0x00]) }));
      assert.equal((await noExt.closeCode()).code, 1002);
      // A reserved DEFLATE block type (BTYPE 11).
      const corrupt = await rawWsConnect(h.port, { headers: "Sec-WebSocket-Extensions: permessage-deflate\r\n" });
      corrupt.write(encodeFrame({ opcode: 1, rsv: 4, payload: Buffer.from([0x07, 0xff, 0xff]) }));
      assert.equal((await corrupt.closeCode()).code, 1007);
      // 4 MiB of spaces compress to a few KiB, under the 64 KiB limit on the wire.
      const bomb = new WebSocket(`${h.url.replace(/^http/, "ws")}/v1/ws`, { perMessageDeflate: { threshold: 0 } });
      await new Promise((resolve, reject) => {
        bomb.once("open", resolve);
        bomb.once("error", reject);
      });
      const closed = new Promise((resolve) => bomb.once("close", (code) => resolve(code)));
      bomb.send(JSON.stringify({ op: "ping", pad: " ".repeat(4 * 1024 * 1024) }));
      assert.equal(await closed, 1009);
      await wsStillReceives(h.url, bystander, "stream:deflate-by");
    } finally {
      await bystander.close();
    }
  });
});

describe("permessage-deflate in headless Chromium", () => {
  const h = suiteHerald([]);

  test("Chromium's WebSocket negotiates permessage-deflate and reads compressed publications", { timeout: TEST_TIMEOUT }, async () => {
    const browser = await launchChromium(30_000); // playwright's own default
    try {
      const page = await browser.newPage();
      await page.goto(`${h.url}/v1/info`); // any page of Herald's origin
      const channel = "stream:deflate-chromium";
      // The page subscribes and collects what it reads; Node publishes.
      await page.evaluate(async ([url, channel]) => {
        window.received = [];
        const ws = new WebSocket(url);
        window.ws = ws;
        ws.onmessage = (e) => window.received.push(JSON.parse(e.data));
        await new Promise((resolve, reject) => {
          ws.onopen = resolve;
          ws.onerror = reject;
        });
        ws.send(JSON.stringify({ op: "subscribe", id: 1, channel }));
      }, [`${h.url.replace(/^http/, "ws")}/v1/ws`, channel]);
      await page.waitForFunction(() => window.received.some((m) => m.op === "subscribed"));
      const sent = [];
      for (let i = 0; i < 5; i++) {
        sent.push(balance(i));
        await publishOk(h.url, { channel, event: "balance", data: balance(i) });
      }
      await page.waitForFunction(() => window.received.filter((m) => m.op === "publication").length >= 5);
      const { extensions, data } = await page.evaluate(() => ({
        extensions: window.ws.extensions,
        data: window.received.filter((m) => m.op === "publication").map((m) => m.data),
      }));
      assert.match(extensions, /permessage-deflate/);
      assert.match(extensions, /server_no_context_takeover/);
      assert.deepEqual(data, sent);
    } finally {
      await browser.close();
    }
  });
});

for (const [enc, Sdk] of ENCODINGS) {
  describe(`permessage-deflate with the centrifuge SDK (${enc})`, () => {
    const h = suiteHerald(["--history-size=200"]);

    test("the SDK's ws transport negotiates it; publications (delta on top) decode as published", { timeout: TEST_TIMEOUT }, async () => {
      const channel = `stream:deflate-sdk-${enc}`;
      // The SDK's WebSocket: `ws`, which offers permessage-deflate unless told not to.
      let socket;
      class Recording extends WebSocket {
        constructor(...args) {
          super(...args);
          socket = this;
        }
      }
      const c = sdkClient(Sdk, h.port, { websocket: Recording });
      const sub = subscription(c, channel, { delta: "fossil" });
      sub.subscribe();
      c.connect();
      try {
        await new Promise((resolve) => sub.once("subscribed", resolve));
        assert.match(socket.extensions, /^permessage-deflate/);
        const sent = [];
        for (let i = 0; i < 30; i++) {
          sent.push(balance(i));
          await publishOk(h.url, { channel, event: "balance", data: balance(i) });
        }
        const deadline = Date.now() + 5000;
        while (sub.pubs.length < 30 && Date.now() < deadline) await sleep(20);
        assert.deepEqual(sub.pubs.map((p) => p.data), sent);
      } finally {
        c.disconnect();
      }
    });
  });
}

describe("--ws-deflate-min-bytes=0", () => {
  test("permessage-deflate is not negotiated", { timeout: TEST_TIMEOUT }, async () => {
    await withHerald(["--ws-deflate-min-bytes=0"], async (h) => {
      const c = await wsConnect(h.url, { options: { perMessageDeflate: true } });
      try {
        assert.equal(c.ws.extensions, "");
        assert.equal((await wsSubscribe(c, "stream:off")).op, "subscribed");
      } finally {
        await c.close();
      }
    });
  });
});
