// Centrifugo's Protobuf client protocol on /connection/websocket, written and
// read byte by byte: raw `ws` sockets (subprotocol `centrifuge-protobuf`, or
// `?format=protobuf` without it) send binary frames of varint-length-delimited
// `Command`s made by the small writer below, and the replies are read by the
// small decoder below (field numbers of centrifugal/protocol
// `definitions/client.proto`, as the `centrifuge` 5.8 SDK's Protobuf build
// encodes them; the SDK does not export its protobufjs types). Covered:
// connect, subscribe, publications (`Publication.data` is the publication's
// JSON text), the server's ping (an empty Reply) and the client's pong (an
// empty Command), several commands in one message, recovery and flag 2 (112),
// unknown fields, unknown methods (104), an empty binary message, and each
// kind of bad input with its close code (a text frame 1003, undecodable bytes
// 3501, a message over --max-ws-message-bytes 1009), after each of which a
// fresh Protobuf SDK client still connects and receives a publication; the
// per-command rate limit (111 by id, 3501 "rate limited"), where an empty
// message costs one token. docs/centrifugo.md is the contract; the SDK
// scenarios on both encodings are in centrifugo.test.mjs.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { Centrifuge as CentrifugeProtobuf } from "centrifuge/build/protobuf";
import WebSocket from "ws";

import { awaitBackgroundStops, getJson, publishOk, suiteHerald, waitUntil } from "./lib/herald.mjs";
import { api, assertBurstAnswered, COMMANDS_BURST as BURST, COMMANDS_LIMIT_ARGS } from "./lib/centrifuge.mjs";

after(awaitBackgroundStops);

const SUBPROTOCOL = "centrifuge-protobuf";
const waitFor = (fn, what, timeoutMs = 5000) => waitUntil(fn, { what, timeoutMs });

// ---------------------------------------------------------------------------
// Writer: just enough of the Protobuf wire format to write commands, and to
// write them wrong.

/** The varint encoding of a non-negative integer (number or BigInt). */
function varint(n) {
  let v = BigInt(n);
  const out = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return Buffer.from(out);
}

const WIRE = { varint: 0, fixed64: 1, len: 2, fixed32: 5 };
const fieldKey = (field, wire) => varint((BigInt(field) << 3n) | BigInt(wire));
const pb = {
  uint: (field, n) => Buffer.concat([fieldKey(field, WIRE.varint), varint(n)]),
  bool: (field, b) => pb.uint(field, b ? 1 : 0),
  bytes: (field, b) => {
    const buf = Buffer.from(b);
    return Buffer.concat([fieldKey(field, WIRE.len), varint(buf.length), buf]);
  },
  msg: (field, ...parts) => pb.bytes(field, Buffer.concat(parts)),
  fixed64: (field) => Buffer.concat([fieldKey(field, WIRE.fixed64), Buffer.alloc(8, 7)]),
  fixed32: (field) => Buffer.concat([fieldKey(field, WIRE.fixed32), Buffer.alloc(4, 7)]),
};

/** One WebSocket message: each Command preceded by its length as a varint. */
const frame = (...commands) => Buffer.concat(commands.flatMap((c) => [varint(c.length), c]));

// Command's fields (client.proto): id = 1, then one request per method.
const METHOD = {
  connect: 4,
  subscribe: 5,
  unsubscribe: 6,
  publish: 7,
  presence: 8,
  presence_stats: 9,
  history: 10,
  ping: 11,
  send: 12,
  rpc: 13,
  refresh: 14,
  sub_refresh: 15,
};
const opt = (cond, part) => (cond ? [part] : []);

/** A Command: `id` (left out when 0, as proto3 writes it) and `method`'s request made of `body`. */
const command = (id, method, ...body) => Buffer.concat([...opt(id, pb.uint(1, id)), pb.msg(METHOD[method], ...body)]);
const connectCmd = (id, token) => command(id, "connect", ...opt(token, pb.bytes(1, token ?? "")));
// SubscribeRequest: channel 1, recover 3, epoch 6, offset 7, flag 14.
const subscribeCmd = (id, channel, { recover = false, epoch = "", offset = 0, flag = 0 } = {}) =>
  command(id, "subscribe", pb.bytes(1, channel), ...opt(recover, pb.bool(3, true)), ...opt(epoch, pb.bytes(6, epoch)),
    ...opt(offset, pb.uint(7, offset)), ...opt(flag, pb.uint(14, flag)));
const unsubscribeCmd = (id, channel) => command(id, "unsubscribe", pb.bytes(1, channel));
const pingCmd = (id) => command(id, "ping");

// ---------------------------------------------------------------------------
// Decoder: Reply and what it holds, strictly (a malformed reply fails the test).

/** A message's fields in order: {field, wire, value} (BigInt for varints, Buffer otherwise). */
function readFields(buf) {
  const fields = [];
  let pos = 0;
  const readVarint = () => {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (pos >= buf.length) throw new Error("truncated varint");
      if (shift > 63n) throw new Error("varint over 64 bits");
      const b = buf[pos++];
      v |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  };
  const take = (n) => {
    if (pos + n > buf.length) throw new Error(`a field of ${n} bytes past the end of its message`);
    const out = buf.subarray(pos, pos + n);
    pos += n;
    return out;
  };
  while (pos < buf.length) {
    const key = readVarint();
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (field === 0) throw new Error("field number 0");
    if (wire === WIRE.varint) fields.push({ field, wire, value: readVarint() });
    else if (wire === WIRE.len) fields.push({ field, wire, value: take(Number(readVarint())) });
    else if (wire === WIRE.fixed64) fields.push({ field, wire, value: take(8) });
    else if (wire === WIRE.fixed32) fields.push({ field, wire, value: take(4) });
    else throw new Error(`wire type ${wire}`);
  }
  return fields;
}

// Field number -> [name, type]. Scalars: uint, bool, string, bytes; "map" is
// map<string,string>; "T[]" is repeated T; "Raw" keeps a message's bytes.
const SCHEMA = {
  Reply: {
    1: ["id", "uint"],
    2: ["error", "Error"],
    4: ["push", "Push"],
    5: ["connect", "ConnectResult"],
    6: ["subscribe", "SubscribeResult"],
    7: ["unsubscribe", "Raw"],
    8: ["publish", "Raw"],
    9: ["presence", "Raw"],
    10: ["presence_stats", "Raw"],
    11: ["history", "Raw"],
    12: ["ping", "Raw"],
    13: ["rpc", "Raw"],
    14: ["refresh", "RefreshResult"],
    15: ["sub_refresh", "Raw"],
  },
  Error: { 1: ["code", "uint"], 2: ["message", "string"], 3: ["temporary", "bool"] },
  Push: {
    1: ["id", "uint"],
    2: ["channel", "string"],
    4: ["pub", "Publication"],
    5: ["join", "Raw"],
    6: ["leave", "Raw"],
    7: ["unsubscribe", "Unsubscribe"],
    8: ["message", "Raw"],
    9: ["subscribe", "Raw"],
    10: ["connect", "Raw"],
    11: ["disconnect", "Disconnect"],
    12: ["refresh", "Raw"],
  },
  Publication: {
    4: ["data", "bytes"],
    5: ["info", "Raw"],
    6: ["offset", "uint"],
    7: ["tags", "map"],
    8: ["delta", "bool"],
    9: ["time", "uint"],
    10: ["channel", "string"],
  },
  ConnectResult: {
    1: ["client", "string"],
    2: ["version", "string"],
    3: ["expires", "bool"],
    4: ["ttl", "uint"],
    5: ["data", "bytes"],
    6: ["subs", "Raw[]"],
    7: ["ping", "uint"],
    8: ["pong", "bool"],
    9: ["session", "string"],
    10: ["node", "string"],
    11: ["time", "uint"],
  },
  SubscribeResult: {
    1: ["expires", "bool"],
    2: ["ttl", "uint"],
    3: ["recoverable", "bool"],
    6: ["epoch", "string"],
    7: ["publications", "Publication[]"],
    8: ["recovered", "bool"],
    9: ["offset", "uint"],
    10: ["positioned", "bool"],
    11: ["data", "bytes"],
    12: ["was_recovering", "bool"],
    13: ["delta", "bool"],
  },
  RefreshResult: { 1: ["client", "string"], 2: ["version", "string"], 3: ["expires", "bool"], 4: ["ttl", "uint"] },
  Unsubscribe: { 2: ["code", "uint"], 3: ["reason", "string"] },
  Disconnect: { 1: ["code", "uint"], 2: ["reason", "string"], 3: ["reconnect", "bool"] },
  MapEntry: { 1: ["key", "string"], 2: ["value", "string"] },
};
const DEFAULTS = { uint: () => 0, bool: () => false, string: () => "", bytes: () => Buffer.alloc(0), map: () => ({}) };

/** Decodes `buf` as `type` with proto3 defaults for absent scalars; absent messages stay undefined. */
function decode(type, buf) {
  if (type === "Raw") return { bytes: Buffer.from(buf) };
  const schema = SCHEMA[type];
  const out = {};
  for (const [name, t] of Object.values(schema)) {
    if (t.endsWith("[]")) out[name] = [];
    else if (DEFAULTS[t]) out[name] = DEFAULTS[t]();
  }
  const seen = new Set();
  for (const { field, wire, value } of readFields(buf)) {
    const entry = schema[field];
    if (!entry) {
      (out._unknown ??= []).push(field);
      continue;
    }
    const [name, t] = entry;
    const expectWire = t === "uint" || t === "bool" ? WIRE.varint : WIRE.len;
    if (wire !== expectWire) throw new Error(`${type}.${name}: wire type ${wire}`);
    if (t.endsWith("[]")) {
      out[name].push(decode(t.slice(0, -2), value));
      continue;
    }
    if (t === "map") {
      const e = decode("MapEntry", value);
      out[name][e.key] = e.value;
      continue;
    }
    if (seen.has(field)) throw new Error(`${type}.${name} twice`);
    seen.add(field);
    if (t === "uint") out[name] = Number(value);
    else if (t === "bool") out[name] = value !== 0n;
    else if (t === "string") out[name] = value.toString("utf8");
    else if (t === "bytes") out[name] = Buffer.from(value);
    else out[name] = decode(t, value);
  }
  return out;
}

/** The Replies of one binary WebSocket message (varint-length-delimited). */
function decodeReplies(buf) {
  const replies = [];
  let pos = 0;
  while (pos < buf.length) {
    let len = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (pos >= buf.length) throw new Error("truncated length prefix");
      const b = buf[pos++];
      len |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    const end = pos + Number(len);
    if (end > buf.length) throw new Error(`a reply of ${len} bytes past the end of the message`);
    replies.push(decode("Reply", buf.subarray(pos, end)));
    pos = end;
  }
  return replies;
}

/** A Reply that is the server's ping: empty (no id, no result, no push). */
const isPing = (r) => r.id === 0 && Object.values(SCHEMA.Reply).every(([name, t]) => t === "uint" || r[name] === undefined);
const text = (bytes) => new TextDecoder("utf-8", { fatal: true }).decode(bytes);

// ---------------------------------------------------------------------------
// Clients.

/**
 * A raw `ws` connection to /connection/websocket speaking Protobuf: records
 * each binary message (`frames`), the Replies decoded from them, text frames
 * (none expected) and the close.
 */
async function rawProto(port, { subprotocol = true, query = "" } = {}) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/connection/websocket${query}`, subprotocol ? [SUBPROTOCOL] : []);
  const c = { ws, frames: [], replies: [], texts: [], decodeErrors: [], closed: null };
  ws.on("message", (data, isBinary) => {
    if (!isBinary) {
      c.texts.push(data.toString());
      return;
    }
    const buf = Buffer.from(data);
    c.frames.push(buf);
    try {
      c.replies.push(...decodeReplies(buf));
    } catch (e) {
      c.decodeErrors.push(`${e.message}: ${buf.toString("hex")}`);
    }
  });
  ws.on("close", (code, reason) => (c.closed = { code, reason: reason.toString() }));
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  c.send = (...commands) => ws.send(frame(...commands));
  c.byId = (id) => c.replies.filter((r) => r.id === id);
  c.reply = (id) => waitFor(() => c.byId(id)[0], `the reply to command ${id}`);
  c.pubs = (channel) => c.replies.filter((r) => r.push?.pub && r.push.channel === channel).map((r) => r.push.pub);
  /** Nothing but well-formed binary Replies arrived. */
  c.checkWire = () => {
    assert.deepEqual(c.decodeErrors, [], "every binary message decodes as Replies");
    assert.deepEqual(c.texts, [], "no text frames on a Protobuf connection");
  };
  return c;
}

/** A connected raw client (connect without a token: these heralds run with --insecure). */
async function connected(port, opts) {
  const c = await rawProto(port, opts);
  c.send(connectCmd(1));
  const r = await c.reply(1);
  assert.ok(r.connect, `connect reply: ${JSON.stringify(r)}`);
  return c;
}

let healthSeq = 0;
/** A fresh Protobuf SDK client connects, subscribes and receives a publication. */
async function stillServes(h) {
  const n = ++healthSeq;
  const channel = `stream:pb-health-${n}`;
  const c = new CentrifugeProtobuf(`ws://127.0.0.1:${h.port}/connection/websocket`, {
    websocket: WebSocket,
    minReconnectDelay: 50,
    maxReconnectDelay: 300,
    timeout: 3000,
  });
  const sub = c.newSubscription(channel);
  const got = [];
  sub.on("publication", (ctx) => got.push(JSON.parse(text(ctx.data))));
  sub.subscribe();
  c.connect();
  try {
    await waitFor(() => sub.state === "subscribed", `a fresh Protobuf SDK client subscribed (${channel})`);
    await publishOk(h.url, { channel, event: "health", data: { n } });
    await waitFor(() => got.length === 1, `its publication on ${channel}`);
    assert.deepEqual(got, [{ n }]);
  } finally {
    c.disconnect();
  }
}

/** Publishes through /api/publish (the event as tag `event`); returns the result. */
const apiPublish = (h, channel, data, event) => api(h.url, "publish", { channel, data, tags: { event } });

// ---------------------------------------------------------------------------

/** A ping Command padded with an unknown bytes field (99) to make a message of exactly `total` bytes. */
function paddedPing(id, total) {
  for (let pad = total; pad >= 0; pad--) {
    const m = frame(Buffer.concat([pb.uint(1, id), pb.msg(METHOD.ping), pb.bytes(99, Buffer.alloc(pad, 0x61))]));
    if (m.length === total) return m;
  }
  throw new Error(`no padding makes ${total} bytes`);
}

describe("Centrifugo Protobuf protocol on a raw socket", () => {
  const MAX_MESSAGE = 4096;
  const h = suiteHerald(["--ws-ping-interval=1", "--history-size=10", `--max-ws-message-bytes=${MAX_MESSAGE}`]);

  test("centrifuge-protobuf: connect, subscribe, publications as JSON bytes, ping and pong, unsubscribe", async () => {
    const ch = "stream:pb-basic";
    const c = await rawProto(h.port);
    try {
      assert.equal(c.ws.protocol, SUBPROTOCOL, "the server accepts the subprotocol");
      c.send(connectCmd(1));
      const conn = (await c.reply(1)).connect;
      assert.ok(conn, JSON.stringify(c.replies));
      assert.match(conn.client, /^[0-9a-f-]{36}$/);
      assert.match(conn.version, /^herald /);
      assert.equal(conn.ping, 1, "--ws-ping-interval");
      assert.equal(conn.pong, true);
      assert.equal(conn.expires, false, "no token, no expiry");

      c.send(subscribeCmd(2, ch));
      const sub = (await c.reply(2)).subscribe;
      assert.ok(sub, JSON.stringify(c.byId(2)));
      assert.equal(sub.recoverable, true);
      assert.equal(sub.positioned, true);
      assert.match(sub.epoch, /^[a-z0-9]{1,32}$/);
      assert.equal(sub.offset, 0);
      assert.equal(sub.was_recovering, false);
      assert.deepEqual(sub.publications, []);

      // Through /v1/publish and /api/publish: the data bytes are the JSON text.
      await publishOk(h.url, { channel: ch, event: "withdrawn", data: { amount: "12.5000000", memo: "caf\u00e9 \u{1f680}" } });
      await apiPublish(h, ch, [1, { two: null }], "topped_up");
      await waitFor(() => c.pubs(ch).length === 2, "2 publications");
      const [p1, p2] = c.pubs(ch);
      assert.equal(text(p1.data), '{"amount":"12.5000000","memo":"caf\u00e9 \u{1f680}"}');
      assert.equal(p1.offset, 1);
      assert.deepEqual(p1.tags, { event: "withdrawn" });
      assert.equal(text(p2.data), '[1,{"two":null}]');
      assert.equal(p2.offset, 2);
      assert.deepEqual(p2.tags, { event: "topped_up" });

      // The server's ping is an empty Reply: a binary message of one byte, 0.
      await waitFor(() => c.frames.some((f) => f.equals(Buffer.from([0]))), "the server's ping (one byte 0x00)", 4000);
      // The pong is an empty Command (one byte 0): not answered.
      c.ws.send(Buffer.from([0]));
      c.send(pingCmd(3));
      assert.ok((await c.reply(3)).ping, JSON.stringify(c.byId(3)));

      c.send(unsubscribeCmd(4, ch));
      assert.ok((await c.reply(4)).unsubscribe, JSON.stringify(c.byId(4)));
      await publishOk(h.url, { channel: ch, event: "e", data: { after: "unsubscribe" } });
      // Subscribing again from offset 2 recovers offset 3 inside the reply: it
      // was not pushed meanwhile (a subscription's reply precedes its pushes).
      c.send(subscribeCmd(5, ch, { recover: true, epoch: sub.epoch, offset: 2 }));
      const again = (await c.reply(5)).subscribe;
      assert.ok(again, JSON.stringify(c.byId(5)));
      assert.equal(again.recovered, true);
      assert.deepEqual(again.publications.map((p) => [p.offset, text(p.data)]), [[3, '{"after":"unsubscribe"}']]);
      assert.equal(c.pubs(ch).length, 2, "nothing pushed while unsubscribed");

      for (const id of [1, 2, 3, 4, 5]) assert.equal(c.byId(id).length, 1, `one reply to id ${id}`);
      assert.ok(c.replies.every((r) => r.id || r.push || isPing(r)), "replies without an id are pushes or pings");
      assert.equal(c.closed, null);
      c.checkWire();
    } finally {
      c.ws.close();
    }
  });

  test("?format=protobuf without the subprotocol: the same protocol", async () => {
    const ch = "stream:pb-format";
    const c = await rawProto(h.port, { subprotocol: false, query: "?format=protobuf" });
    try {
      assert.equal(c.ws.protocol, "");
      c.send(connectCmd(1));
      const conn = (await c.reply(1)).connect;
      assert.ok(conn, JSON.stringify(c.replies));
      assert.match(conn.client, /^[0-9a-f-]{36}$/);
      assert.equal(conn.ping, 1);
      c.send(subscribeCmd(2, ch));
      assert.ok((await c.reply(2)).subscribe, JSON.stringify(c.byId(2)));
      await publishOk(h.url, { channel: ch, event: "e", data: { n: 1 } });
      await waitFor(() => c.pubs(ch).length === 1, "the publication");
      assert.equal(text(c.pubs(ch)[0].data), '{"n":1}');
      assert.equal(c.pubs(ch)[0].offset, 1);
      assert.equal(c.closed, null);
      c.checkWire();
    } finally {
      c.ws.close();
    }
  });

  test("several commands in one message, each answered once by its id", async () => {
    const c = await rawProto(h.port);
    try {
      c.send(connectCmd(1), subscribeCmd(2, "stream:pb-multi-a"), subscribeCmd(3, "stream:pb-multi-b"), pingCmd(4),
             unsubscribeCmd(5, "stream:pb-multi-none"));
      await waitFor(() => [1, 2, 3, 4, 5].every((id) => c.byId(id).length), "a reply to every id");
      assert.ok(c.byId(1)[0].connect);
      assert.ok(c.byId(2)[0].subscribe);
      assert.ok(c.byId(3)[0].subscribe);
      assert.ok(c.byId(4)[0].ping);
      assert.ok(c.byId(5)[0].unsubscribe);
      await publishOk(h.url, { channel: "stream:pb-multi-b", event: "e", data: { n: 1 } });
      await waitFor(() => c.pubs("stream:pb-multi-b").length === 1, "a publication");
      for (const id of [1, 2, 3, 4, 5]) assert.equal(c.byId(id).length, 1, `one reply to id ${id}`);
      assert.equal(c.closed, null);
      c.checkWire();
    } finally {
      c.ws.close();
    }
  });

  test("recovery: missed publications in the subscribe reply; flag 2 from an unknown epoch: 112; without it: recovered false", async () => {
    const ch = "stream:pb-recover";
    for (let n = 1; n <= 3; n++) await publishOk(h.url, { channel: ch, event: "e", data: { n } });
    const pos = (await getJson(h.url, `/v1/channels/${ch}`)).json;
    assert.equal(pos.offset, 3);
    const c = await connected(h.port);
    try {
      c.send(subscribeCmd(2, ch, { recover: true, epoch: pos.epoch, offset: 1 }));
      const sub = (await c.reply(2)).subscribe;
      assert.ok(sub, JSON.stringify(c.byId(2)));
      assert.equal(sub.was_recovering, true);
      assert.equal(sub.recovered, true);
      assert.equal(sub.epoch, pos.epoch);
      assert.equal(sub.offset, 3);
      assert.deepEqual(sub.publications.map((p) => [p.offset, text(p.data), p.tags.event]), [
        [2, '{"n":2}', "e"],
        [3, '{"n":3}', "e"],
      ]);
      await publishOk(h.url, { channel: ch, event: "e", data: { n: 4 } });
      await waitFor(() => c.pubs(ch).length === 1, "the live publication after the recovered ones");
      assert.equal(c.pubs(ch)[0].offset, 4);

      // flag 2 (rejectUnrecovered): error 112, the reason as message.
      const other = "stream:pb-recover-other";
      await publishOk(h.url, { channel: other, event: "e", data: { n: 1 } });
      c.send(subscribeCmd(3, other, { recover: true, epoch: "nosuchepoch", offset: 1, flag: 2 }));
      const refused = await c.reply(3);
      assert.equal(refused.error?.code, 112, JSON.stringify(refused));
      assert.match(refused.error.message, /epoch_changed|history_expired|offset_in_future/);
      // Without the flag: subscribed, not recovered.
      c.send(subscribeCmd(4, other, { recover: true, epoch: "nosuchepoch", offset: 1 }));
      const notRecovered = (await c.reply(4)).subscribe;
      assert.ok(notRecovered, JSON.stringify(c.byId(4)));
      assert.equal(notRecovered.was_recovering, true);
      assert.equal(notRecovered.recovered, false);
      assert.equal(notRecovered.offset, 1);
      assert.equal(c.closed, null);
      c.checkWire();
    } finally {
      c.ws.close();
    }
  });

  test("unknown fields are ignored, in a Command and in its request", async () => {
    const ch = "stream:pb-unknown-fields";
    const unknown = [pb.uint(99, 5), pb.bytes(100, "junk"), pb.fixed64(101), pb.fixed32(102), pb.msg(1000, pb.uint(1, 1))];
    const c = await rawProto(h.port);
    try {
      c.send(Buffer.concat([pb.uint(1, 1), ...unknown.slice(0, 2), pb.msg(METHOD.connect, ...unknown), ...unknown.slice(2)]));
      assert.ok((await c.reply(1)).connect, JSON.stringify(c.replies));
      c.send(Buffer.concat([pb.msg(METHOD.subscribe, pb.uint(77, 1), pb.bytes(1, ch), pb.bytes(78, "x")), pb.uint(1, 2), ...unknown]));
      assert.ok((await c.reply(2)).subscribe, JSON.stringify(c.byId(2)));
      c.send(Buffer.concat([pb.uint(1, 3), pb.msg(METHOD.ping, ...unknown)]));
      assert.ok((await c.reply(3)).ping, JSON.stringify(c.byId(3)));
      await publishOk(h.url, { channel: ch, event: "e", data: { n: 1 } });
      await waitFor(() => c.pubs(ch).length === 1, "a publication on the channel subscribed with unknown fields");
      assert.equal(c.closed, null);
      c.checkWire();
    } finally {
      c.ws.close();
    }
    await stillServes(h);
  });

  test("methods Herald does not offer are answered 104 with their id; the connection stays", async () => {
    const c = await connected(h.port);
    try {
      // A Command with only an id and rpc (13), then the other unsupported ones.
      c.send(Buffer.concat([pb.uint(1, 2), pb.msg(METHOD.rpc)]));
      const rpc = await c.reply(2);
      assert.equal(rpc.error?.code, 104, JSON.stringify(rpc));
      assert.ok(rpc.error.message, JSON.stringify(rpc));
      c.send(
        command(3, "rpc", pb.bytes(1, '{"a":1}'), pb.bytes(2, "method")),
        command(4, "publish", pb.bytes(1, "stream:pb-104"), pb.bytes(2, '{"a":1}')),
        command(5, "presence", pb.bytes(1, "stream:pb-104")),
        command(6, "presence_stats", pb.bytes(1, "stream:pb-104")),
        command(7, "history", pb.bytes(1, "stream:pb-104"), pb.uint(7, 1)),
        command(8, "sub_refresh", pb.bytes(1, "stream:pb-104"), pb.bytes(2, "token")),
        pingCmd(9),
      );
      assert.ok((await c.reply(9)).ping, JSON.stringify(c.byId(9)));
      await waitFor(() => [3, 4, 5, 6, 7, 8].every((id) => c.byId(id).length), "a reply to every unsupported command");
      for (const id of [2, 3, 4, 5, 6, 7, 8]) {
        assert.equal(c.byId(id).length, 1, `one reply to id ${id}`);
        assert.equal(c.byId(id)[0].error?.code, 104, JSON.stringify(c.byId(id)));
      }
      assert.equal(c.closed, null);
      c.checkWire();
    } finally {
      c.ws.close();
    }
    await stillServes(h);
  });

  test("an empty binary message is no command: nothing answered, the connection stays open", async () => {
    const c = await connected(h.port);
    try {
      const before = c.replies.length;
      for (let i = 0; i < 3; i++) c.ws.send(Buffer.alloc(0), { binary: true });
      c.ws.send(Buffer.from([0])); // an empty Command (a pong) is not answered either
      c.send(pingCmd(2));
      assert.ok((await c.reply(2)).ping);
      const since = c.replies.slice(before).filter((r) => !isPing(r));
      assert.deepEqual(since.map((r) => r.id), [2], "only the ping is answered");
      assert.equal(c.closed, null);
      c.checkWire();
    } finally {
      c.ws.close();
    }
  });

  test("a message of exactly --max-ws-message-bytes is read", async () => {
    const c = await connected(h.port);
    try {
      const m = paddedPing(2, MAX_MESSAGE);
      assert.equal(m.length, MAX_MESSAGE);
      c.ws.send(m);
      assert.ok((await c.reply(2)).ping, JSON.stringify(c.byId(2)));
      assert.equal(c.closed, null);
      c.checkWire();
    } finally {
      c.ws.close();
    }
  });

  test("a command before connect closes with 3501", async () => {
    const c = await rawProto(h.port);
    c.send(subscribeCmd(1, "stream:pb-early"));
    await waitFor(() => c.closed, "the close");
    assert.equal(c.closed.code, 3501, JSON.stringify(c.closed));
    assert.match(c.closed.reason, /^bad request/);
    assert.equal(c.byId(1).filter((r) => r.subscribe).length, 0, "not subscribed");
    await stillServes(h);
  });

  // Each after a successful connect, so the close is the input's and not a
  // command before connect.
  // [what, close code, close reason, the message's bytes]
  const BAD_REQUEST = /^bad request/;
  const BAD = [
    ["a text frame", 1003, null, '{"id":2,"ping":{}}'],
    ["a truncated varint (length prefix)", 3501, BAD_REQUEST, Buffer.from([0x80])],
    ["a truncated varint inside a command (its id)", 3501, BAD_REQUEST, Buffer.from([0x02, 0x08, 0x80])],
    ["a command length past the end of the message", 3501, BAD_REQUEST, Buffer.from([0x05, 0x08, 0x02])],
    ["a length prefix over 32 bits", 3501, BAD_REQUEST, Buffer.concat([varint(2n ** 40n), pingCmd(2)])],
    [
      "a request's length past the end of its command",
      3501,
      BAD_REQUEST,
      frame(Buffer.concat([pb.uint(1, 2), fieldKey(METHOD.subscribe, WIRE.len), varint(16), Buffer.from([0x0a])])),
    ],
    [
      "the id with a wrong wire type (length-delimited)",
      3501,
      BAD_REQUEST,
      frame(Buffer.concat([pb.bytes(1, "\x02"), pb.msg(METHOD.ping)])),
    ],
    ["an invalid wire type (7)", 3501, BAD_REQUEST, frame(Buffer.concat([pb.uint(1, 2), fieldKey(20, 7), Buffer.from([0])]))],
    ["a message over --max-ws-message-bytes", 1009, null, paddedPing(2, MAX_MESSAGE + 1)],
  ];
  for (const [what, code, reason, message] of BAD) {
    test(`${what}: close ${code}; the server goes on serving`, async () => {
      const c = await connected(h.port);
      c.ws.send(message); // a string goes as a text frame, a Buffer as a binary one
      try {
        await waitFor(() => c.closed, `the close after ${what}`);
      } catch (e) {
        c.ws.close();
        throw new Error(`${e.message}; replies: ${JSON.stringify(c.replies.filter((r) => !isPing(r)))}`);
      }
      assert.equal(c.closed.code, code, JSON.stringify(c.closed));
      if (reason) assert.match(c.closed.reason, reason);
      assert.equal(c.byId(2).length, 0, "nothing answered to the bad message");
      await stillServes(h);
    });
  }
});

describe("Centrifugo Protobuf protocol: a known field with another wire type", () => {
  const h = suiteHerald();
  // Protobuf keeps a field whose wire type does not match the schema as an
  // unknown field (libprotobuf does): `ping` (11) sent as a varint is no
  // method, so the command is answered 107 by its id and the connection stays.
  test("a method sent as a varint is no method: 107 by id, the connection stays open", async () => {
    const c = await connected(h.port);
    c.ws.send(frame(Buffer.concat([pb.uint(1, 2), pb.uint(METHOD.ping, 1)])));
    await waitFor(() => c.byId(2).length > 0, "the reply to id 2");
    const [reply] = c.byId(2);
    assert.equal(reply.error?.code, 107, JSON.stringify(reply));
    assert.match(reply.error.message, /no method/);
    assert.equal(c.closed, null);
    c.ws.close();
    await stillServes(h);
  });
});

describe("Centrifugo Protobuf protocol: commands per second", () => {
  const h = suiteHerald(COMMANDS_LIMIT_ARGS);

  test("one message of 150 commands past a burst of 100: the rest answered 111 by id, not run", async () => {
    const c = await connected(h.port);
    try {
      const ids = Array.from({ length: 150 }, (_, i) => i + 2);
      c.send(...ids.map((id) => pingCmd(id)));
      await waitFor(() => ids.every((id) => c.byId(id).length), "a reply to every command");
      assertBurstAnswered(c.replies, ids, BURST);
      assert.equal(c.closed, null);
      c.checkWire();
    } finally {
      c.ws.close();
    }
  });

  test("an empty binary message costs one token", async () => {
    const c = await connected(h.port);
    try {
      // The connect took 1 of the 100 tokens, the empty messages 98 more:
      // of 10 pings, one finds a token (two or three if the bucket refilled).
      for (let i = 0; i < BURST - 2; i++) c.ws.send(Buffer.alloc(0), { binary: true });
      const ids = Array.from({ length: 10 }, (_, i) => i + 2);
      c.send(...ids.map((id) => pingCmd(id)));
      await waitFor(() => ids.every((id) => c.byId(id).length), "a reply to every ping");
      const pings = ids.filter((id) => c.byId(id)[0].ping);
      const refused = ids.filter((id) => c.byId(id)[0].error?.code === 111);
      assert.ok(pings.length >= 1 && pings.length <= 3, `${pings.length} pings run: ${JSON.stringify(c.replies)}`);
      assert.equal(pings.length + refused.length, ids.length);
      assert.equal(c.closed, null);
      c.checkWire();
    } finally {
      c.ws.close();
    }
  });

  test("--ws-commands-burst commands refused in a row, in one message: 3501 rate limited", async () => {
    const c = await connected(h.port);
    c.send(...Array.from({ length: 3 * BURST }, (_, i) => pingCmd(i + 2)));
    await waitFor(() => c.closed, "the close");
    assert.deepEqual(c.closed, { code: 3501, reason: "bad request: rate limited" });
    assert.ok(c.replies.some((r) => r.error?.code === 111));
    assert.ok(c.replies.filter((r) => r.ping).length <= BURST + 1);
    c.checkWire();
    await stillServes(h);
  });
});
