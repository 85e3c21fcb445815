// The two builds of the real `centrifuge` SDK that the Centrifugo suites run
// every scenario on (docs/centrifugo.md "Which SDKs work today"), and how an
// app reads a publication's data from either.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";

import { Centrifuge } from "centrifuge";
import { Centrifuge as CentrifugeProtobuf } from "centrifuge/build/protobuf";
import WebSocket from "ws";

import { publishOk, readReply, sleep, waitUntil } from "./herald.mjs";
import { startProxy } from "./proxy.mjs";

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
 * Runs `body({c, sub, proxy})` with a client of `Sdk` that reaches herald's
 * `port` through a fresh proxy (lib/proxy.mjs startProxy, to drop, stall or
 * retarget its connection), subscribed to `channel` (subscribedClient) and
 * seen subscribed; always disconnects the client and closes the proxy after.
 * @param {Function} Sdk an ENCODINGS build
 * @param {number} port herald's port
 * @param {string} channel
 * @param {object} subOpts the subscription's options (delta, tagsFilter, since, ...)
 * @param {(x: {c:object, sub:object, proxy:object}) => Promise<any>} body
 * @param {{timeoutMs?:number}} opts how long the first subscribe may take (ms, default 10,000)
 * @returns {Promise<any>} what `body` returned
 * @throws what `body` threw, or when the subscribe does not succeed in time
 */
export async function withProxiedSubscriber(Sdk, port, channel, subOpts, body, { timeoutMs = 10_000 } = {}) {
  const proxy = await startProxy(port);
  const { c, sub } = subscribedClient(Sdk, proxy.port, channel, subOpts);
  try {
    await waitUntil(() => sub.state === "subscribed", { what: `${channel} subscribed`, timeoutMs });
    return await body({ c, sub, proxy });
  } finally {
    c.disconnect();
    await proxy.close();
  }
}

/**
 * The context of the second "subscribed" event of `sub` (an SDK
 * subscription()), the one after its connection came back; asserts there
 * were exactly two.
 * @param {object} sub
 * @param {string} what prefix of the assertion's message
 * @returns {object} the event's ctx (wasRecovering, recovered, streamPosition, ...)
 * @throws {assert.AssertionError} when `sub` was subscribed another number of times
 */
export function resubscribed(sub, what = "") {
  const subscribed = sub.events.filter((e) => e.name === "subscribed");
  assert.equal(subscribed.length, 2, `${what}subscribed again after the drop`);
  return subscribed[1].ctx;
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

/**
 * The command rate limit the Centrifugo suites (JSON and Protobuf) run
 * under: a bucket of COMMANDS_BURST commands refilled at 1 per second, so
 * the refill while one message is read is at most a token or two.
 * COMMANDS_LIMIT_ARGS are the herald flags.
 */
export const COMMANDS_BURST = 100;
export const COMMANDS_LIMIT_ARGS = ["--ws-commands-per-second=1", `--ws-commands-burst=${COMMANDS_BURST}`];

/**
 * Checks the replies to one message of ping commands sent past a full token
 * bucket of `burst` tokens (`--ws-commands-burst`, refilled at 1 per second)
 * of which the connect took one: each id answered once, `burst - 1` to
 * `burst + 1` pings run (a token or two may refill while the message is
 * read), every other one refused with 111, and the ones that found a token
 * are the first ones of the message.
 * @param {Array<{id:number, ping?:object, error?:{code:number}}>} replies every reply of the
 *   connection, JSON or decoded Protobuf
 * @param {number[]} ids the pings' ids, in the order sent
 * @param {number} burst the bucket's size
 * @throws {assert.AssertionError} when any of that does not hold
 */
export function assertBurstAnswered(replies, ids, burst) {
  const answered = replies.filter((r) => ids.includes(r.id));
  assert.equal(answered.length, ids.length, "each id answered once");
  const pings = answered.filter((r) => r.ping);
  const refused = answered.filter((r) => r.error);
  assert.ok(pings.length >= burst - 1 && pings.length <= burst + 1, `${pings.length} pings run`);
  assert.equal(pings.length + refused.length, ids.length);
  for (const r of refused) assert.equal(r.error.code, 111, JSON.stringify(r));
  // The commands that found a token are the first ones of the message.
  assert.ok(Math.max(...pings.map((r) => r.id)) < Math.min(...refused.map((r) => r.id)));
}

/**
 * Makes the SDK client `c`, subscribed to `channel` through `proxy`
 * (lib/proxy.mjs startProxy), a slow client and waits until it sees the
 * server close it. The proxy stops reading from herald while `channel` gets
 * publications of `data(i)` plus 50,000 random bytes as hex (random: the
 * SDK's `ws` negotiates permessage-deflate, which would shrink a repeated
 * padding to almost nothing, and no Fossil delta is smaller than it): past
 * the kernel's socket buffers and a 1 MiB high-water mark, at most 160, and
 * no further: resumed as soon as herald counts the slow client (looked at
 * every 10th), so its close frame, queued behind what the kernel holds, is
 * written within the close grace, also on a slow (sanitizer) build.
 * The close the SDK sees is 3008 when the frame got through the drained path
 * within the 2 s close grace; on a loaded sanitizer build the path may still
 * hold megabytes then, and the SDK sees the TCP close ("transport closed",
 * code 1).
 * @param {{url:string, proxy:{pauseUpstream:Function, resumeUpstream:Function}, c:object,
 *   channel:string, data:(i:number) => object, timeoutMs?:number}} how `url` herald's base URL;
 *   `timeoutMs` for the close to be seen (default 8000 ms)
 * @returns {Promise<() => Promise<boolean>>} `slowClosed()`: whether herald's /metrics counts a
 *   slow_client disconnect (the count and the close are two updates)
 * @throws when the close is not seen within `timeoutMs`
 */
export async function closeAsSlow({ url, proxy, c, channel, data, timeoutMs = 8000 }) {
  const slowClosed = async () =>
    /herald_disconnects_total\{[^}]*reason="slow_client"[^}]*\} [1-9]/.test(await (await fetch(`${url}/metrics`)).text());
  proxy.pauseUpstream();
  for (let i = 0; i < 160 && !(i % 10 === 9 && (await slowClosed())); i++)
    await publishOk(url, { channel, event: "big", data: { ...data(i), pad: randomBytes(50_000).toString("hex") } });
  proxy.resumeUpstream();
  await waitUntil(() => c.events.some((e) => e.name === "connecting" && (e.ctx.code === 3008 || e.ctx.code === 1)), {
    what: "the slow client's close",
    timeoutMs,
  });
  return slowClosed;
}

/**
 * POST `${url}/api/${method}`: Centrifugo's server API (docs/centrifugo.md
 * "Server API"). `body` is JSON-serialised unless it is a string (sent as
 * is); `key`, when given, goes in the header `header` names: "x-api-key"
 * (X-API-Key: <key>), "authorization" (Authorization: apikey <key>) or
 * "bearer" (Authorization: Bearer <key>, which /api refuses).
 * @param {string} url herald's base URL
 * @param {string} method publish, broadcast, history, info, ...
 * @returns {Promise<{status:number, headers:Headers, text:string, json:any}>} readReply()
 */
export async function apiRaw(url, method, body, key, { header = "x-api-key" } = {}) {
  const headers = { "content-type": "application/json" };
  if (key !== undefined) {
    if (header === "authorization") headers.authorization = `apikey ${key}`;
    else if (header === "bearer") headers.authorization = `Bearer ${key}`;
    else headers[header] = key;
  }
  const res = await fetch(`${url}/api/${method}`, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return readReply(res);
}

/**
 * apiRaw() for a call that must succeed: returns the answer's `result`.
 * @throws {Error} with the status and body unless the answer is 200 with a `result`
 */
export async function api(url, method, body, key, opts) {
  const r = await apiRaw(url, method, body, key, opts);
  if (r.status !== 200 || !r.json?.result) throw new Error(`/api/${method}: ${r.status} ${r.text}`);
  return r.json.result;
}
