// WebSocket helpers for the Herald end-to-end tests: a `ws`-package client
// with a waitable inbox, and a raw RFC 6455 client over node:net for frames
// the `ws` package refuses to send (unmasked, reserved bits, bad opcodes...).

import assert from "node:assert/strict";
import crypto from "node:crypto";
import net from "node:net";
import { before } from "node:test";

import WebSocket from "ws";

import { Inbox, probeUntilDelivered, suiteHerald } from "./herald.mjs";

// ------------------------------------------------------------- ws package

/**
 * Connects with the `ws` package to `${baseUrl}/v1/ws`.
 * @returns {Promise<{ws: WebSocket, inbox: Inbox, send:(obj:any)=>void,
 *   closed: Promise<{code:number, reason:string}>, close:()=>Promise<void>,
 *   request:(obj:any, opts?:object)=>Promise<any>}>}
 * Inbox items are parsed JSON messages; a binary message is {binary: Buffer}
 * and a text message that is not JSON is {raw: string}.
 */
export async function wsConnect(baseUrl, { path = "/v1/ws", options = {} } = {}) {
  const ws = new WebSocket(baseUrl.replace(/^http/, "ws") + path, { perMessageDeflate: false, ...options });
  const inbox = new Inbox();
  ws.on("message", (data, isBinary) => {
    if (isBinary) {
      inbox.push({ binary: data });
      return;
    }
    const text = data.toString("utf8");
    try {
      inbox.push(JSON.parse(text));
    } catch {
      inbox.push({ raw: text });
    }
  });
  ws.on("error", () => {}); // surfaced through `closed`
  const closed = new Promise((resolve) => {
    ws.once("close", (code, reason) => {
      const info = { code, reason: reason.toString("utf8") };
      inbox.close(info);
      resolve(info);
    });
  });
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
    ws.once("unexpected-response", (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
  });
  let nextId = 1000;
  const client = {
    ws,
    inbox,
    closed,
    send: (obj) => ws.send(typeof obj === "string" ? obj : JSON.stringify(obj)),
    /** Sends `obj` with a fresh id (unless it has one) and resolves with the reply carrying that id. */
    request: async (obj, { timeoutMs = 5000 } = {}) => {
      const msg = "id" in obj ? obj : { ...obj, id: ++nextId };
      const from = inbox.items.length;
      client.send(msg);
      return inbox.until(
        (items) => items.slice(from).find((m) => m.id === msg.id && m.op !== "publication"),
        { timeoutMs, what: `reply to ${JSON.stringify(msg)}` },
      );
    },
    /** Closes normally (or terminates if the close handshake hangs). */
    close: async () => {
      if (ws.readyState === WebSocket.CLOSED) return;
      ws.close(1000);
      const t = setTimeout(() => ws.terminate(), 2000);
      await closed;
      clearTimeout(t);
    },
  };
  return client;
}

/**
 * Runs `body(client)` with a fresh /v1/ws client of `baseUrl` (wsConnect) and
 * always closes it after; returns what `body` returns, rethrows what it throws.
 */
export async function withWs(baseUrl, body) {
  const client = await wsConnect(baseUrl);
  try {
    return await body(client);
  } finally {
    await client.close();
  }
}

/** Subscribes and returns the `subscribed` (or `error`) reply. */
export function wsSubscribe(client, channel, { since, id } = {}) {
  const msg = { op: "subscribe", channel };
  if (id !== undefined) msg.id = id;
  if (since !== undefined) msg.since = since;
  return client.request(msg);
}

/** Publications of `channel` in the inbox (from index `from`). */
export function publicationsOf(client, channel, from = 0) {
  return client.inbox.items.slice(from).filter((m) => m.op === "publication" && m.channel === channel);
}

/**
 * Checks that `client` (subscribed to `channel`) still receives publications:
 * publishes probes until one arrives.
 */
export async function wsStillReceives(baseUrl, client, channel) {
  await probeUntilDelivered(baseUrl, client.inbox, [channel], {
    timeoutMs: 5000,
    isProbe: (m, tag) => m.op === "publication" && m.channel === channel && m.data?.probe === tag,
  });
}

/**
 * The herald of a describe block (suiteHerald(args)) with a bystander: a
 * /v1/ws client its `before` hook subscribes to `channel`, which the tests
 * check keeps receiving while they misbehave. The bystander and every
 * client made with `raw()` are closed before herald stops.
 * @param {string[]} args herald flags
 * @param {string} channel the bystander's channel
 * @returns {{h: object, bystander: () => object, stillReceives: () => Promise<void>, raw: () => Promise<object>}}
 *   `h` the suiteHerald() handle; `bystander()` the client (once the hook ran);
 *   `stillReceives()` wsStillReceives() on it (throws when no probe arrives within 5 s);
 *   `raw()` a new rawWsConnect() client, destroyed at the end
 */
export function suiteWithBystander(args, channel) {
  let bystander;
  const raws = [];
  const h = suiteHerald(args, {
    beforeStop: async () => {
      for (const r of raws) r.destroy();
      await bystander?.close();
    },
  });
  before(async () => {
    bystander = await wsConnect(h.url);
    assert.equal((await wsSubscribe(bystander, channel)).op, "subscribed");
  });
  const raw = async () => {
    const r = await rawWsConnect(h.port);
    raws.push(r);
    return r;
  };
  return { h, bystander: () => bystander, stillReceives: () => wsStillReceives(h.url, bystander, channel), raw };
}

// --------------------------------------------------------------- raw socket

/**
 * Encodes one WebSocket frame.
 * @param {{fin?:boolean, rsv?:number, opcode:number, payload?:Buffer|string,
 *   mask?:boolean, declaredLength?:bigint|number}} f `rsv` is the 3 reserved
 *   bits (0-7, RSV1 = 4); `declaredLength` overrides the length field (the
 *   payload is then sent as given, possibly shorter).
 */
export function encodeFrame({ fin = true, rsv = 0, opcode, payload = Buffer.alloc(0), mask = true, declaredLength }) {
  const body = Buffer.isBuffer(payload) ? payload : Buffer.from(payload, "utf8");
  const len = declaredLength === undefined ? BigInt(body.length) : BigInt(declaredLength);
  const b0 = (fin ? 0x80 : 0) | ((rsv & 7) << 4) | (opcode & 0x0f);
  let head;
  if (len < 126n) {
    head = Buffer.from([b0, (mask ? 0x80 : 0) | Number(len)]);
  } else if (len < 65536n) {
    head = Buffer.alloc(4);
    head[0] = b0;
    head[1] = (mask ? 0x80 : 0) | 126;
    head.writeUInt16BE(Number(len), 2);
  } else {
    head = Buffer.alloc(10);
    head[0] = b0;
    head[1] = (mask ? 0x80 : 0) | 127;
    head.writeBigUInt64BE(len, 2);
  }
  if (!mask) return Buffer.concat([head, body]);
  const key = crypto.randomBytes(4);
  const masked = Buffer.alloc(body.length);
  for (let i = 0; i < body.length; i++) masked[i] = body[i] ^ key[i & 3];
  return Buffer.concat([head, key, masked]);
}

/**
 * Opens a raw TCP connection, performs the WebSocket handshake by hand and
 * parses the server's frames. `headers`: extra request header lines, each ending in
 * "\r\n"; `head` of the result: the response head (status line and fields).
 * @returns {Promise<{socket: net.Socket, frames: Inbox, sendFrame:(f:object)=>void,
 *   sendJson:(obj:any)=>void, write:(buf:Buffer)=>void, ended: Promise<string>,
 *   closeCode:(timeoutMs?:number)=>Promise<{code:number|null, ended:string}>}>}
 * Frame items: {fin, rsv, opcode, payload, text?, json?, code?, reason?}
 * (`code`/`reason` on close frames). `ended` resolves to "end", "close" or an
 * error code when the TCP connection goes away.
 */
export async function rawWsConnect(port, { path = "/v1/ws", pause = false, headers = "" } = {}) {
  const socket = net.connect({ host: "127.0.0.1", port });
  socket.on("error", () => {}); // reported through `ended`
  await new Promise((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  const key = crypto.randomBytes(16).toString("base64");
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n${headers}\r\n`,
  );
  const frames = new Inbox();
  let buf = Buffer.alloc(0);
  let handshaken = false;
  let responseHead = "";
  let resolveHandshake;
  let rejectHandshake;
  const handshake = new Promise((resolve, reject) => {
    resolveHandshake = resolve;
    rejectHandshake = reject;
  });
  let endReason = null;
  const ended = new Promise((resolve) => {
    const finish = (why) => {
      if (endReason !== null) return;
      endReason = why;
      frames.close({ ended: why });
      rejectHandshake(new Error(`connection ${why} during handshake`));
      resolve(why);
    };
    socket.on("end", () => finish("end"));
    socket.on("error", (err) => finish(err.code || String(err)));
    socket.on("close", () => finish("close"));
  });
  const expectedAccept = crypto
    .createHash("sha1")
    .update(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
    .digest("base64");
  socket.on("data", (chunk) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    if (!handshaken) {
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = buf.subarray(0, end).toString("latin1");
      responseHead = head;
      buf = buf.subarray(end + 4);
      handshaken = true;
      if (!/^HTTP\/1\.1 101 /.test(head)) {
        rejectHandshake(new Error(`handshake refused: ${head}`));
        return;
      }
      const accept = /sec-websocket-accept:\s*(\S+)/i.exec(head)?.[1];
      if (accept !== expectedAccept) {
        rejectHandshake(new Error(`bad Sec-WebSocket-Accept ${accept}, want ${expectedAccept}`));
        return;
      }
      resolveHandshake();
    }
    for (;;) {
      if (buf.length < 2) return;
      const fin = (buf[0] & 0x80) !== 0;
      const rsv = (buf[0] >> 4) & 7;
      const opcode = buf[0] & 0x0f;
      const masked = (buf[1] & 0x80) !== 0;
      let len = buf[1] & 0x7f;
      let off = 2;
      if (len === 126) {
        if (buf.length < 4) return;
        len = buf.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (buf.length < 10) return;
        len = Number(buf.readBigUInt64BE(2));
        off = 10;
      }
      if (masked) off += 4;
      if (buf.length < off + len) return;
      let payload = Buffer.from(buf.subarray(off, off + len));
      if (masked) {
        const k = buf.subarray(off - 4, off);
        for (let i = 0; i < payload.length; i++) payload[i] ^= k[i & 3];
      }
      buf = buf.subarray(off + len);
      const frame = { fin, rsv, opcode, masked, payload };
      if (opcode === 1) {
        frame.text = payload.toString("utf8");
        try {
          frame.json = JSON.parse(frame.text);
        } catch {
          // not JSON
        }
      } else if (opcode === 8) {
        frame.code = payload.length >= 2 ? payload.readUInt16BE(0) : null;
        frame.reason = payload.subarray(2).toString("utf8");
      }
      frames.push(frame);
    }
  });
  await handshake;
  if (pause) socket.pause();
  const client = {
    socket,
    head: responseHead,
    frames,
    ended,
    write: (b) => socket.write(b),
    sendFrame: (f) => socket.write(encodeFrame(f)),
    sendJson: (obj) => socket.write(encodeFrame({ opcode: 1, payload: JSON.stringify(obj) })),
    /** JSON text messages received. */
    messages: () => frames.items.filter((f) => f.json !== undefined).map((f) => f.json),
    /**
     * Waits for the server to close: resolves with the close frame's code
     * (null when the connection dropped without one) once the TCP connection
     * is gone or a close frame arrived.
     */
    closeCode: async (timeoutMs = 5000) => {
      await frames
        .until((items) => items.some((f) => f.opcode === 8), { timeoutMs, what: "a close frame" })
        .catch((err) => {
          if (!frames.closed) throw err;
        });
      const close = frames.items.find((f) => f.opcode === 8);
      return { code: close ? close.code : null, reason: close?.reason, ended: endReason };
    },
    destroy: () => socket.destroy(),
  };
  return client;
}
