// Helpers for the Herald end-to-end tests: start/stop real herald processes
// (startHerald, withHerald, suiteHerald), publish over HTTP, subscribe over
// SSE with curl, parse event streams.
//
// Every process started here is registered in ./processes.mjs, which stops
// whatever is left (by PID) when the test process exits, so a failing or
// interrupted test never leaves a server behind.

import { readFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { after, before } from "node:test";
import { fileURLToPath } from "node:url";

import { ACCOUNT_ID_VERSION, base32Encode, crc16Xmodem, encodeAccountId, isAccountId } from "../../../demo/strkey.mjs";
import { collectOutput, isAlive, killAndWait, sanitizerReport, spawnProcess } from "./processes.mjs";
import { hsSetup } from "./tokens.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));

// ------------------------------------------------------------ Stellar addresses

/** A valid account id ("G...") made from `seed` (any number). */
export function accountId(seed) {
  return encodeAccountId(Uint8Array.from({ length: 32 }, (_, i) => (seed * 31 + i * 7) & 0xff));
}

/**
 * A canonical base32 StrKey of 56 characters for `seed` with the checksum
 * wrong (or, with `version`, another version byte and a right checksum).
 */
export function badAccountId(seed, { version = ACCOUNT_ID_VERSION, breakChecksum = true } = {}) {
  const raw = new Uint8Array(35);
  raw[0] = version;
  raw.set(Uint8Array.from({ length: 32 }, (_, i) => (seed * 31 + i * 7) & 0xff), 1);
  let crc = crc16Xmodem(raw.subarray(0, 33));
  if (breakChecksum) crc ^= 0x0101;
  raw[33] = crc & 0xff;
  raw[34] = crc >> 8;
  const text = base32Encode(raw);
  if (text.length !== 56 || isAccountId(text)) throw new Error(`not a bad account id: ${text}`);
  return text;
}

/** Path of the herald binary: $HERALD_BIN or ../../../build/bin/herald. */
export const HERALD_BIN =
  process.env.HERALD_BIN || path.resolve(here, "..", "..", "..", "build", "bin", "herald");

// ------------------------------------------------------------ waiting

/** Resolves after `ms` milliseconds. */
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `fn` until it returns a truthy value (returned), or throws after
 * `timeoutMs` with `what` in the message.
 */
export async function waitUntil(fn, { timeoutMs = 5000, intervalMs = 20, what = "condition" } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/**
 * Reads `read()` every `intervalMs` until `pred(value)` holds and returns
 * that value; after `timeoutMs` throws waitUntil()'s error (naming `what`)
 * with `show(last)`, the last value read, on a line of its own.
 * @template T
 * @param {() => Promise<T>} read
 * @param {(value: T) => boolean} pred
 * @param {{what:string, timeoutMs?:number, intervalMs?:number, show?:(last: T|undefined) => string}} opts
 *   times in ms (defaults 5000 and 50); `show` defaults to JSON.stringify
 * @returns {Promise<T>}
 */
export async function pollUntil(read, pred, { what, timeoutMs = 5000, intervalMs = 50, show = (v) => JSON.stringify(v) }) {
  let last;
  try {
    return await waitUntil(
      async () => {
        last = await read();
        return pred(last) && last;
      },
      { timeoutMs, intervalMs, what },
    );
  } catch (err) {
    err.message += `\n${show(last)}`;
    throw err;
  }
}

// ------------------------------------------------------------------- herald

/**
 * Starts herald on 127.0.0.1 with a free port (`--port=0`; the port is read
 * from its "listening on" line) and registers the process (processes.mjs).
 * @param {string[]} args extra command-line options, e.g. ["--history-size=3"]
 * @param {{timeoutMs?:number, insecure?:boolean, env?:Record<string,string>}} opts
 *   `insecure` (default true) adds `--insecure` (no token or API key checks:
 *   the suites that are not about authentication); tests/e2e/auth*.test.mjs
 *   pass false and real keys. `env` adds environment variables (PORT,
 *   HERALD_JWT_SECRET and HERALD_API_KEY of the test's environment are
 *   cleared unless `env` sets them).
 * @returns {Promise<{port:number, url:string, pid:number, process:import('node:child_process').ChildProcess,
 *   log:()=>string, rssKb:()=>number, alive:()=>boolean, kill:(signal?:string)=>Promise<void>,
 *   stop:()=>Promise<void>}>}
 *   `stop()` (SIGTERM, SIGKILL after 5 s) rejects when the output holds a
 *   sanitizer report; `kill(signal)` signals by PID and waits for the exit
 *   (call stop() afterwards all the same: it makes the sanitizer check).
 */
export async function startHerald(args = [], { timeoutMs = 10_000, insecure = true, env = {} } = {}) {
  // herald reads caf-application.ini from its working directory, so run it
  // in the test directory (which has none).
  const child = spawnProcess(
    HERALD_BIN,
    ["--host=127.0.0.1", "--port=0", ...(insecure ? ["--insecure"] : []), ...args],
    {
      cwd: here,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, PORT: "", HERALD_JWT_SECRET: "", HERALD_API_KEY: "", ...env },
    },
    "herald",
  );
  let port = null;
  let log;
  const listening = new Promise((resolve, reject) => {
    log = collectOutput(child, {
      limit: 1_000_000,
      keep: 500_000,
      onText: (text) => {
        if (port !== null) return;
        const m = /listening on [^\s"]*:(\d+)/.exec(text);
        if (m) {
          port = Number(m[1]);
          resolve(port);
        }
      },
    });
    child.once("error", reject);
    child.once("exit", (code, signal) =>
      reject(new Error(`herald exited before listening (code ${code}, signal ${signal}):\n${log()}`)),
    );
  });
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`herald did not listen within ${timeoutMs} ms:\n${log()}`)), timeoutMs);
  });
  try {
    await Promise.race([listening, timeout]);
  } catch (err) {
    child.kill("SIGKILL");
    throw err;
  } finally {
    clearTimeout(timer);
  }
  let stopping = null;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    process: child,
    log,
    /** Resident set size of the server in KiB (from /proc/<pid>/status). */
    rssKb: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
      const m = /VmRSS:\s+(\d+)\s+kB/.exec(status);
      return m ? Number(m[1]) : NaN;
    },
    /** True while the process runs. */
    alive: () => isAlive(child),
    /** Sends `signal` (default SIGKILL) by PID and waits for the exit. */
    kill: (signal = "SIGKILL") => killAndWait(child, signal),
    /** SIGTERM, then SIGKILL after 5 s; resolves when the process is gone. */
    stop: () => {
      if (stopping) return stopping;
      stopping = (async () => {
        await killAndWait(child, "SIGTERM");
        // A sanitized build (HERALD_TEST_SANITIZED=1) reports memory errors,
        // leaks and undefined behaviour on stderr: that fails the test.
        const report = sanitizerReport(log());
        if (report) throw new Error(`herald (pid ${child.pid}) sanitizer report: ${report}\n${log().slice(-4000)}`);
      })();
      return stopping;
    },
  };
}

const backgroundStops = new Set();

/**
 * Stops `h` (anything with a stop() method) without waiting (herald's
 * graceful shutdown takes 3 s), so the next suite of the file can start;
 * `awaitBackgroundStops()` (in a file-level `after`) waits for all of them
 * and fails on the first stop that failed (a sanitizer report).
 */
export function stopInBackground(h) {
  if (!h) return;
  const p = h.stop();
  backgroundStops.add(p);
  p.finally(() => backgroundStops.delete(p));
}

/** Waits until every herald stopped with stopInBackground() has exited. */
export async function awaitBackgroundStops() {
  await Promise.all([...backgroundStops]);
}

/**
 * Starts herald (`args`, `opts` as for startHerald), runs `body(h)` and
 * always stops it, whether the body passed or threw; returns what the body
 * returned. `opts.stop`: "background" (default) stops it with
 * stopInBackground(), so the file's `after(awaitBackgroundStops)` waits for
 * the exit and fails on a sanitizer report; "await" waits for the exit (and
 * the sanitizer check) before returning. A failing body's error wins over
 * a failing stop.
 * @template T
 * @param {string[]} args
 * @param {{timeoutMs?:number, insecure?:boolean, env?:Record<string,string>, stop?:"background"|"await"}} opts
 * @param {(h: Awaited<ReturnType<typeof startHerald>>) => Promise<T>} body
 * @returns {Promise<T>}
 */
export async function withHerald(args, opts, body) {
  if (typeof opts === "function") [opts, body] = [{}, opts];
  const { stop = "background", ...startOpts } = opts ?? {};
  const h = await startHerald(args, startOpts);
  let result;
  try {
    result = await body(h);
  } catch (err) {
    if (stop === "await") await h.stop().catch(() => {});
    else stopInBackground(h);
    throw err;
  }
  if (stop === "await") await h.stop();
  else stopInBackground(h);
  return result;
}

/**
 * The herald of a `describe` block: registers a `before` hook that starts it
 * and an `after` hook that runs `beforeStop()` (closing the suite's clients)
 * and then stops it: with stopInBackground() (the file's
 * `after(awaitBackgroundStops)` waits for it), or, with `stop: "await"`,
 * waiting for the exit and the sanitizer check in the hook. Returns an object that the
 * `before` hook fills with the startHerald() handle (url, port, log, stop,
 * ...), so tests use it directly. `args` and `opts` may be functions, called
 * in the `before` hook (for keys made there).
 * @param {string[] | (() => string[])} args
 * @param {object | (() => object)} opts startHerald options, plus `beforeStop` and `stop`
 * @returns {Awaited<ReturnType<typeof startHerald>>}
 */
export function suiteHerald(args = [], opts = {}) {
  const h = {};
  let started = null;
  let beforeStop = null;
  let stop = "background";
  before(async () => {
    const { beforeStop: b = null, stop: s = "background", ...o } = typeof opts === "function" ? opts() : opts;
    [beforeStop, stop] = [b, s];
    started = await startHerald(typeof args === "function" ? args() : args, o);
    Object.assign(h, started);
  });
  after(async () => {
    try {
      if (beforeStop) await beforeStop();
    } finally {
      if (stop === "await") await started?.stop();
      else stopInBackground(started);
    }
  });
  return h;
}

/**
 * suiteHerald() with real keys instead of `--insecure`: the `before` hook
 * makes them with hsSetup() (an HS256 secret and an API key, in files) and
 * starts herald with their args followed by `extraArgs`.
 * @param {string[]} extraArgs more herald flags
 * @param {object} opts as for suiteHerald (`insecure` is always false)
 * @returns {{h: Awaited<ReturnType<typeof startHerald>>, auth: ReturnType<typeof hsSetup>}} both
 *   filled by the `before` hook: `h` the handle, `auth` the hsSetup() object (`token(claims)`,
 *   `apiKey`, `auth` headers, ...)
 */
export function securedSuiteHerald(extraArgs = [], opts = {}) {
  const auth = {};
  const h = suiteHerald(
    () => {
      Object.assign(auth, hsSetup());
      return [...auth.args, ...extraArgs];
    },
    { ...opts, insecure: false },
  );
  return { h, auth };
}

// ------------------------------------------------------------------ publish

/**
 * POSTs to `${url}/v1/publish`. `body` is JSON-serialised unless it is a
 * string (sent as is); `headers` are added to the request.
 * @returns {Promise<{status:number, headers:Headers, text:string, json:any}>}
 */
export async function publish(url, body, { headers = {} } = {}) {
  const res = await fetch(`${url}/v1/publish`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return readReply(res);
}

/** `text` parsed as JSON, or undefined when it is not JSON (never throws). */
export function jsonOrUndefined(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Reads a fetch() Response to its end.
 * @param {Response} res
 * @returns {Promise<{status:number, headers:Headers, text:string, json:any}>} `json` is the body
 *   parsed (jsonOrUndefined: undefined when it is not JSON)
 */
export async function readReply(res) {
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: jsonOrUndefined(text) };
}

/**
 * Like publish() but on a fresh connection closed after the reply
 * (node:http, no keep-alive pool), for tests where a pooled idle connection
 * to the server would change what is being observed (e.g. a restart).
 */
export function publishOnce(url, body) {
  const payload = Buffer.from(typeof body === "string" ? body : JSON.stringify(body), "utf8");
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${url}/v1/publish`,
      {
        method: "POST",
        agent: false,
        headers: { "content-type": "application/json", "content-length": payload.length, connection: "close" },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, text, json: jsonOrUndefined(text) }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

/** Like publish() but throws unless the reply is 200; returns the offsets object. */
export async function publishOk(url, body, opts = {}) {
  const r = await publish(url, body, opts);
  if (r.status !== 200) throw new Error(`publish failed: ${r.status} ${r.text}`);
  return r.json.offsets;
}

/** GET `${url}${route}` and parse the JSON body (if any). */
export async function getJson(url, route, init = {}) {
  return readReply(await fetch(`${url}${route}`, init));
}

// --------------------------------------------------------------- SSE parser

/**
 * Incremental parser for a text/event-stream body (WHATWG HTML "Server-sent
 * events"). Feed it decoded text; it calls `onEvent({id, event, data})` per
 * dispatched event (`id`/`event` are undefined when the block had no such
 * field), `onComment(text)` per comment line and `onRetry(ms)` per retry field.
 * Unlike a browser it also dispatches events with empty data, so nothing the
 * server sends goes unseen.
 */
export class SseParser {
  constructor({ onEvent = () => {}, onComment = () => {}, onRetry = () => {} } = {}) {
    this.onEvent = onEvent;
    this.onComment = onComment;
    this.onRetry = onRetry;
    this.buffer = "";
    this.pendingCR = false;
    this.reset();
  }

  reset() {
    this.id = undefined;
    this.event = undefined;
    this.data = [];
    this.hasFields = false;
  }

  feed(text) {
    if (this.pendingCR && text.startsWith("\n")) text = text.slice(1);
    this.pendingCR = false;
    this.buffer += text;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      if (!m) break;
      // A lone CR at the end of the buffer may be the first half of CRLF.
      if (m[0] === "\r" && m.index === this.buffer.length - 1) {
        this.pendingCR = true;
      }
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      this.line(line);
    }
  }

  line(line) {
    if (line === "") {
      if (this.hasFields) {
        this.onEvent({ id: this.id, event: this.event, data: this.data.join("\n") });
      }
      this.reset();
      return;
    }
    if (line.startsWith(":")) {
      this.onComment(line.slice(1));
      return;
    }
    const colon = line.indexOf(":");
    let field = line;
    let value = "";
    if (colon >= 0) {
      field = line.slice(0, colon);
      value = line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
    }
    switch (field) {
      case "id":
        this.id = value;
        this.hasFields = true;
        break;
      case "event":
        this.event = value;
        this.hasFields = true;
        break;
      case "data":
        this.data.push(value);
        this.hasFields = true;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.onRetry(Number(value));
        break;
      default:
        this.unknownFields = (this.unknownFields || []).concat([field]);
        break;
    }
  }
}

/** Parses a whole event-stream text; returns {events, comments, retries}. */
export function parseSse(text) {
  const events = [];
  const comments = [];
  const retries = [];
  const p = new SseParser({
    onEvent: (e) => events.push(e),
    onComment: (c) => comments.push(c),
    onRetry: (r) => retries.push(r),
  });
  p.feed(text);
  return { events, comments, retries };
}

// ------------------------------------------------------------ SSE cursors

/** FNV-1a 32-bit of `text` (UTF-8), as 8 lower-case hex digits. */
export function channelHash(text) {
  let h = 2166136261;
  for (const byte of Buffer.from(text, "utf8")) {
    h ^= byte;
    h = Math.imul(h, 16777619) >>> 0;
  }
  return h.toString(16).padStart(8, "0");
}

/** Splits an SSE cursor into entries [{hash, epoch, offset}] (offset a Number). */
export function parseCursor(cursor) {
  return cursor.split("_").map((entry) => {
    const m = /^([0-9a-f]{8})-([a-z0-9]{1,32})-(\d+)$/.exec(entry);
    if (!m) throw new Error(`not a cursor entry: ${JSON.stringify(entry)} in ${cursor}`);
    return { hash: m[1], epoch: m[2], offset: Number(m[3]) };
  });
}

/** Builds a cursor from entries [{hash | channel, epoch, offset}]. */
export function makeCursor(entries) {
  return entries
    .map((e) => `${e.hash ?? channelHash(e.channel)}-${e.epoch}-${e.offset}`)
    .join("_");
}

/** The {epoch, offset} of `channel` in `cursor`, or undefined. */
export function cursorPosition(cursor, channel) {
  const hash = channelHash(channel);
  const e = parseCursor(cursor).find((x) => x.hash === hash);
  return e ? { epoch: e.epoch, offset: e.offset } : undefined;
}

// ---------------------------------------------------------- waiting on lists

/**
 * A growing list of received items with promise-based waiting, shared by the
 * SSE and WebSocket clients.
 */
export class Inbox {
  constructor() {
    this.items = [];
    this.waiters = [];
    this.closed = false;
    this.closeInfo = undefined;
  }

  push(item) {
    this.items.push(item);
    this.wake();
  }

  close(info) {
    this.closed = true;
    this.closeInfo = info;
    this.wake();
  }

  wake() {
    for (const w of [...this.waiters]) w.check();
  }

  /**
   * Waits until `pred(items)` is truthy and returns its value. Rejects after
   * `timeoutMs`, or when the source closed and `pred` still fails.
   */
  until(pred, { timeoutMs = 5000, what = "items" } = {}) {
    return new Promise((resolve, reject) => {
      const w = {
        check: () => {
          let v;
          try {
            v = pred(this.items);
          } catch (err) {
            done();
            reject(err);
            return;
          }
          if (v) {
            done();
            resolve(v);
          } else if (this.closed) {
            done();
            reject(
              new Error(
                `source closed (${JSON.stringify(this.closeInfo)}) while waiting for ${what}; have ${this.items.length} items: ${summary(this.items)}`,
              ),
            );
          }
        },
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; have ${this.items.length} items: ${summary(this.items)}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.waiters = this.waiters.filter((x) => x !== w);
      };
      this.waiters.push(w);
      w.check();
    });
  }

  /** Waits for at least `n` items; returns the first `n`. */
  count(n, opts = {}) {
    return this.until((items) => items.length >= n && items.slice(0, n), {
      what: `${n} items`,
      ...opts,
    });
  }
}

function summary(items) {
  const text = JSON.stringify(items.slice(-5));
  return text.length > 1500 ? text.slice(0, 1500) + "..." : text;
}

// --------------------------------------------------------------- curl client

/**
 * Subscribes with `curl -sN -i` and parses the reply incrementally.
 * @param {string} url full URL, e.g. `${h.url}/v1/sse?channel=stream:1`
 * @param {Record<string,string>} headers extra request headers
 * @returns {{events: Inbox, comments: Array<{text:string, at:number}>, retries:number[],
 *   status:Promise<number>, headers:Promise<Record<string,string>>, raw:()=>string,
 *   startedAt:number, exited:Promise<number|null>, close:()=>Promise<void>}}
 * Each event item is {id, event, data, at} (`at`: Date.now() on arrival).
 */
export function sseCurl(url, headers = {}) {
  const args = ["-sN", "-i", "--no-buffer", "-H", "Accept: text/event-stream"];
  for (const [k, v] of Object.entries(headers)) args.push("-H", `${k}: ${v}`);
  args.push(url);
  const child = spawnProcess("curl", args, { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout.setEncoding("utf8"); // StringDecoder: multi-byte characters survive chunk splits
  const events = new Inbox();
  const comments = [];
  const retries = [];
  let raw = "";
  let head = "";
  let inBody = false;
  let resolveStatus;
  let resolveHeaders;
  const status = new Promise((r) => (resolveStatus = r));
  const headersP = new Promise((r) => (resolveHeaders = r));
  const parser = new SseParser({
    onEvent: (e) => events.push({ ...e, at: Date.now() }),
    onComment: (text) => comments.push({ text, at: Date.now() }),
    onRetry: (ms) => retries.push(ms),
  });
  child.stdout.on("data", (chunk) => {
    raw += chunk;
    if (inBody) {
      parser.feed(chunk);
      return;
    }
    head += chunk;
    const end = head.indexOf("\r\n\r\n");
    if (end < 0) return;
    inBody = true;
    const lines = head.slice(0, end).split("\r\n");
    const m = /^HTTP\/\d(?:\.\d)? (\d{3})/.exec(lines[0]);
    resolveStatus(m ? Number(m[1]) : NaN);
    const hs = {};
    for (const line of lines.slice(1)) {
      const i = line.indexOf(":");
      if (i > 0) hs[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
    resolveHeaders(hs);
    const rest = head.slice(end + 4);
    head = "";
    if (rest) parser.feed(rest);
  });
  let stderr = "";
  child.stderr.on("data", (c) => (stderr += c));
  const exited = new Promise((resolve) => {
    child.once("exit", (code) => {
      resolveStatus(NaN);
      resolveHeaders({});
      events.close({ curlExit: code, stderr });
      resolve(code);
    });
  });
  return {
    events,
    comments,
    retries,
    status,
    headers: headersP,
    raw: () => raw,
    pid: child.pid,
    startedAt: Date.now(),
    exited,
    /** Kills curl (SIGTERM) and waits for it to exit. */
    close: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        await exited;
      }
    },
  };
}

/**
 * Opens an SSE subscription with curl for `channels` and waits until the
 * server delivers every channel to it: SSE headers go out before the
 * subscriptions are registered, so it publishes probe events (event name
 * `probe`, to all `channels`) until one arrives on each channel. Returns the
 * curl client; `client.mark` is the number of events received so far (the
 * probes and anything replayed), so `events.items.slice(client.mark)` are the
 * events after readiness.
 */
export async function sseReady(baseUrl, channels, { headers = {}, query = "", timeoutMs = 5000, send = publishOk } = {}) {
  const qs = channels.map((c) => `channel=${encodeURIComponent(c)}`).join("&");
  const sub = sseCurl(`${baseUrl}/v1/sse?${qs}${query}`, headers);
  try {
    const status = await sub.status;
    if (status !== 200) throw new Error(`SSE subscribe got ${status}: ${sub.raw()}`);
    await probeUntilDelivered(baseUrl, sub.events, channels, {
      timeoutMs,
      send,
      isProbe: (e, tag) => e.event === "probe" && e.data === JSON.stringify({ probe: tag }),
    });
    sub.mark = sub.events.items.length;
    return sub;
  } catch (err) {
    await sub.close();
    throw err;
  }
}

let probeCounter = 0;

/**
 * Publishes `{probe: tag}` events (event name `probe`) to `channels` until
 * `inbox` holds channels.length items matching `isProbe(item, tag)` for one
 * tag: each channel then delivers to the subscriber.
 */
export async function probeUntilDelivered(baseUrl, inbox, channels, { timeoutMs = 5000, isProbe, send = publishOk }) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const tag = `p${process.pid}-${++probeCounter}`;
    await send(baseUrl, { channels, event: "probe", data: { probe: tag } });
    try {
      await inbox.until((items) => items.filter((e) => isProbe(e, tag)).length >= channels.length, {
        timeoutMs: 250,
        what: `probe ${tag}`,
      });
      return;
    } catch (err) {
      if (inbox.closed || Date.now() > deadline) throw err;
    }
  }
}

/**
 * The channel an SSE event belongs to: the entry of its id that differs from
 * the previous event's id (`prevId`). Returns the channel name from
 * `channels`, or undefined when none or several differ.
 */
export function channelOfEvent(prevId, id, channels) {
  if (!prevId || !id) return undefined;
  const before = new Map(parseCursor(prevId).map((e) => [e.hash, `${e.epoch}-${e.offset}`]));
  const changed = parseCursor(id).filter((e) => before.get(e.hash) !== `${e.epoch}-${e.offset}`);
  if (changed.length !== 1) return undefined;
  return channels.find((c) => channelHash(c) === changed[0].hash);
}

/** The offsets `channel` has in each event id of `events`. */
export function offsetsOf(events, channel) {
  return events.map((e) => cursorPosition(e.id, channel)?.offset);
}

// ------------------------------------------------------------ raw SSE client

/**
 * An SSE subscription over a bare TCP socket (node:net), request sent by
 * hand, for tests that control reading (pause/resume) precisely.
 * @returns {Promise<{socket: import('node:net').Socket, text:()=>string, events:()=>object[],
 *   pause:()=>void, resume:()=>void, ended: Promise<string>, isEnded:()=>boolean, destroy:()=>void}>}
 * `events()` parses what arrived so far (after the response head).
 */
export async function rawSse(port, pathAndQuery, headers = {}) {
  const socket = net.connect(port, "127.0.0.1");
  socket.on("error", () => {}); // reported through `ended`
  const chunks = [];
  let bytes = 0;
  socket.on("data", (d) => {
    chunks.push(d);
    bytes += d.length;
  });
  let endReason = null;
  const ended = new Promise((resolve) => {
    const finish = (why) => {
      if (endReason === null) {
        endReason = why;
        resolve(why);
      }
    };
    socket.on("end", () => finish("end"));
    socket.on("error", (err) => finish(err.code || String(err)));
    socket.on("close", () => finish("close"));
  });
  await new Promise((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  socket.write(`GET ${pathAndQuery} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n${extra}\r\n`);
  const text = () => Buffer.concat(chunks).toString("utf8");
  return {
    socket,
    text,
    bytes: () => bytes,
    events: () => {
      const all = text();
      const end = all.indexOf("\r\n\r\n");
      return end < 0 ? [] : parseSse(all.slice(end + 4)).events;
    },
    pause: () => socket.pause(),
    resume: () => socket.resume(),
    ended,
    isEnded: () => endReason !== null,
    destroy: () => socket.destroy(),
  };
}
