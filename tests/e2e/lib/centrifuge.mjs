// The two builds of the real `centrifuge` SDK that the Centrifugo suites run
// every scenario on (docs/centrifugo.md "Which SDKs work today"), and how an
// app reads a publication's data from either.

import { Centrifuge } from "centrifuge";
import { Centrifuge as CentrifugeProtobuf } from "centrifuge/build/protobuf";
import WebSocket from "ws";

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
