// The two builds of the real `centrifuge` SDK that the Centrifugo suites run
// every scenario on (docs/centrifugo.md "Which SDKs work today"), and how an
// app reads a publication's data from either.

import assert from "node:assert/strict";

import { Centrifuge } from "centrifuge";
import { Centrifuge as CentrifugeProtobuf } from "centrifuge/build/protobuf";
import WebSocket from "ws";

import { sleep, waitUntil } from "./herald.mjs";

/** [name, SDK class]: Centrifugo's JSON protocol and its Protobuf protocol. */
export const ENCODINGS = [
  ["json", Centrifuge],
  ["protobuf", CentrifugeProtobuf],
];

/**
 * A publication's data as the app reads it: the JSON build hands over the
 * parsed JSON value, the Protobuf build the bytes of `Publication.data`, which
 * Herald fills with the publication's JSON text (UTF-8).
 */
export function pubData(ctx) {
  if (!(ctx.data instanceof Uint8Array)) return ctx.data;
  const text = new TextDecoder().decode(ctx.data);
  try {
    return JSON.parse(text);
  } catch {
    return { notJson: text }; // fails the test's comparisons, visibly, instead of throwing inside the SDK
  }
}

/** A client of the SDK build `Sdk` for `port` that records its state changes. */
export function sdkClient(Sdk, port, opts = {}) {
  const c = new Sdk(`ws://127.0.0.1:${port}/connection/websocket`, {
    websocket: WebSocket,
    minReconnectDelay: 50,
    maxReconnectDelay: 300,
    timeout: 3000,
    ...opts,
  });
  c.events = [];
  for (const name of ["connecting", "connected", "disconnected", "error"])
    c.on(name, (ctx) => c.events.push({ name, ctx }));
  return c;
}

/**
 * Subscribes `c` to `channel`, recording publications and subscribe events.
 * Each recorded publication has `data` decoded (pubData) and `raw`, the data as
 * the SDK gave it.
 */
export function subscription(c, channel, opts = {}) {
  const sub = c.newSubscription(channel, opts);
  sub.pubs = [];
  sub.events = [];
  sub.on("publication", (ctx) => sub.pubs.push({ ...ctx, raw: ctx.data, data: pubData(ctx) }));
  for (const name of ["subscribing", "subscribed", "unsubscribed", "error"])
    sub.on(name, (ctx) => sub.events.push({ name, ctx }));
  return sub;
}

/**
 * A decoder of Herald's delta publications made from the real SDK's own
 * (its JSON codec's `applyDeltaIfNeeded`, which takes `{data, delta}` with
 * the data or the Fossil delta as a string, as /v1/ws and Centrifugo's JSON
 * protocol send them). `decode(msg)` returns the publication's value and
 * keeps its bytes as the base of the next delta; `stats` counts the bytes of
 * `data` received and the bytes they decoded to.
 */
export function deltaDecoder() {
  const codec = new Centrifuge("ws://127.0.0.1:9/connection/websocket", { websocket: class {} })._codec;
  let prev = null;
  const stats = { full: 0, deltas: 0, bytesReceived: 0, bytesDecoded: 0 };
  return {
    stats,
    decode(msg) {
      const { newData, newPrevValue, isDelta, wireBytes, fullBytes } = codec.applyDeltaIfNeeded(msg, prev);
      prev = newPrevValue;
      stats[isDelta ? "deltas" : "full"]++;
      stats.bytesReceived += wireBytes;
      stats.bytesDecoded += fullBytes;
      return newData;
    },
  };
}

/** A client of `Sdk` on `port`, subscribing (subscription()) to `channel` and connecting. */
export function subscribedClient(Sdk, port, channel, subOpts = {}, clientOpts = {}) {
  const c = sdkClient(Sdk, port, clientOpts);
  const sub = subscription(c, channel, subOpts);
  sub.subscribe();
  c.connect();
  return { c, sub };
}

/**
 * Cache recovery as the SDK sees it (docs/centrifugo.md "Cache recovery"), on
 * a channel of a class with history-size=1 and recovery=cache: `sub` (made
 * with `since: {}`) receives 1..3 live; `leave()` takes its connection away;
 * 20 more are published meanwhile (its position leaves the history); `back()`
 * lets it reconnect. It must get exactly the latest (23), recovered, with no
 * error and no unsubscribe, then 24 live. `publish(n)` publishes `{n}`.
 */
export async function assertCacheRecovery(sub, { publish, leave, back, timeoutMs = 10_000 }) {
  const waitFor = (fn, what) => waitUntil(fn, { what, timeoutMs });
  const subscribed = () => sub.events.filter((e) => e.name === "subscribed");
  await waitFor(() => sub.state === "subscribed", "subscribed");
  for (let n = 1; n < 4; n++) await publish(n);
  await waitFor(() => sub.pubs.length >= 3, "three live");
  await leave();
  await waitFor(() => sub.state === "subscribing", "the loss seen");
  for (let n = 4; n < 24; n++) await publish(n);
  await back();
  await waitFor(() => subscribed().length === 2, "subscribed again");
  await waitFor(() => sub.pubs.length >= 4, "the latest value");
  await publish(24);
  await waitFor(() => sub.pubs.length >= 5, "live after it");
  await sleep(100);
  assert.deepEqual(sub.pubs.map((p) => p.data.n), [1, 2, 3, 23, 24]);
  assert.equal(subscribed()[1].ctx.wasRecovering, true);
  assert.equal(subscribed()[1].ctx.recovered, true);
  assert.deepEqual(sub.events.filter((e) => e.name === "error" || e.name === "unsubscribed"), []);
}

/**
 * A raw `ws` connection to /connection/websocket for hand-written JSON
 * commands: `replies` collects every reply line (parsed), `closed` the close
 * code and reason once it closes.
 */
export async function rawCentrifugo(port) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/connection/websocket`);
  const state = { ws, replies: [], closed: null };
  ws.on("message", (m) => {
    for (const line of m.toString().split("\n")) if (line.trim()) state.replies.push(JSON.parse(line));
  });
  ws.on("close", (code, reason) => (state.closed = { code, reason: reason.toString() }));
  await new Promise((res, rej) => {
    ws.once("open", res);
    ws.once("error", rej);
  });
  return state;
}
