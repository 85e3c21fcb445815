#!/usr/bin/env node
// Feeds a Herald server with a realistic sequence of Stellar payment-stream
// events. Node.js 20+, no npm dependencies.
//
//   node demo/publisher.mjs [--url http://127.0.0.1:8080] [--interval-ms 1000]
//                           [--count N (0 = forever)] [--seed 1] [--print-channels]
//
// From the seed (a tiny PRNG, so the same seed always gives the same world)
// it makes 4 accounts with valid StrKey addresses and 3 payment streams
// between them, then publishes one lifecycle event per interval:
//
//   created -> (withdrawn | topped_up | paused -> resumed)* -> cancelled
//
// After `cancelled` the stream is replaced by a new one with the next id.
// Each event is POSTed to `${url}/v1/publish` as
//
//   {"channels":["stream:<id>","user:<sender>","user:<recipient>"],
//    "event":"<name>","data":{...}}
//
// Simulated time runs faster than wall-clock time: each event advances the
// ledger clock by 5-120 seconds (one ledger per 5 s) so amounts move
// visibly. `at` is that simulated time, starting from the real start time.
// Amounts are strings with 7 decimal places, like Stellar amounts.
//
// The API key for POST /v1/publish comes from the HERALD_API_KEY environment
// variable (sent as Authorization: Bearer); scripts/run-demo.sh sets it.
// A refusal that no retry can fix (401 without or with a wrong key, 403, any
// other 4xx but 408 and 429) stops the publisher with a message that says
// what to change, and exit status 1; 5xx answers and connection errors are
// retried.
//
// --print-channels prints the channel names of the seed's initial world,
// one per line (stream channels, then user channels), and exits.

import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";

import { encodeAccountId } from "./strkey.mjs";

const USAGE = `usage: node demo/publisher.mjs [--url http://127.0.0.1:8080] [--interval-ms 1000]
                               [--count N (0 = forever)] [--seed 1] [--print-channels]`;

const STROOPS = 10_000_000n; // 1 unit = 10^7 stroops (7 decimal places)
const LEDGER_SECONDS = 5;
const ACCOUNT_NAMES = ["alice", "bob", "carol", "dave"];

// ---------------------------------------------------------------- arguments

/**
 * Parses argv (without node and script). Accepts `--flag value` and
 * `--flag=value`.
 * @returns {{url:string, intervalMs:number, count:number, seed:number, printChannels:boolean, help:boolean}}
 * @throws {Error} with a user-facing message on a bad argument
 */
export function parseArgs(argv) {
  const opts = {
    url: "http://127.0.0.1:8080",
    intervalMs: 1000,
    count: 0,
    seed: 1,
    printChannels: false,
    help: false,
  };
  const integer = (flag, value, min) => {
    if (value === undefined || !/^\d+$/.test(value)) {
      throw new Error(`${flag} needs a non-negative integer, got ${JSON.stringify(value)}`);
    }
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < min) throw new Error(`${flag} must be >= ${min}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    let [flag, value] = argv[i].split(/=(.*)/s, 2);
    const takeValue = () => (value !== undefined ? value : argv[++i]);
    switch (flag) {
      case "--url": {
        const v = takeValue();
        let parsed;
        try {
          parsed = new URL(v);
        } catch {
          throw new Error(`--url is not a URL: ${JSON.stringify(v)}`);
        }
        if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
          throw new Error("--url must be http:// or https://");
        }
        opts.url = v.replace(/\/+$/, "");
        break;
      }
      case "--interval-ms":
        opts.intervalMs = integer(flag, takeValue(), 0);
        break;
      case "--count":
        opts.count = integer(flag, takeValue(), 0);
        break;
      case "--seed":
        opts.seed = integer(flag, takeValue(), 0);
        break;
      case "--print-channels":
      case "-h":
      case "--help":
        if (value !== undefined) throw new Error(`${flag} takes no value`);
        if (flag === "--print-channels") opts.printChannels = true;
        else opts.help = true;
        break;
      default:
        throw new Error(`unknown argument ${JSON.stringify(argv[i])}`);
    }
  }
  return opts;
}

// ---------------------------------------------------------------- PRNG

/** mulberry32: a tiny deterministic PRNG. Returns floats in [0, 1). */
export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const randInt = (rand, lo, hi) => lo + Math.floor(rand() * (hi - lo + 1)); // inclusive
const pick = (rand, items) => items[Math.floor(rand() * items.length)];
const randBytes = (rand, n) => Uint8Array.from({ length: n }, () => Math.floor(rand() * 256));
const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** Chooses a key of `weights` ({name: weight}) with probability by weight. */
function weighted(rand, weights) {
  const entries = Object.entries(weights).filter(([, w]) => w > 0);
  let r = rand() * entries.reduce((sum, [, w]) => sum + w, 0);
  for (const [name, w] of entries) {
    if ((r -= w) < 0) return name;
  }
  return entries[entries.length - 1][0];
}

// ---------------------------------------------------------------- amounts

/** Stroops (BigInt) to a Stellar amount string with 7 decimals. */
export function formatAmount(stroops) {
  const negative = stroops < 0n;
  const abs = negative ? -stroops : stroops;
  const text = `${abs / STROOPS}.${(abs % STROOPS).toString().padStart(7, "0")}`;
  return negative ? `-${text}` : text;
}

const minBig = (a, b) => (a < b ? a : b);
/** A random BigInt in [lo, hi] stroops, at a granularity of `step` stroops. */
const randStroops = (rand, lo, hi, step = 1n) =>
  lo + (BigInt(Math.floor(rand() * Number((hi - lo) / step + 1n))) * step);

const TOKENS = {
  // ratePerSecond and deposit ranges, in stroops
  USDC: { rate: [10_000n, 500_000n], deposit: [100n * STROOPS, 5_000n * STROOPS] },
  XLM: { rate: [100_000n, 5_000_000n], deposit: [1_000n * STROOPS, 50_000n * STROOPS] },
};

// ---------------------------------------------------------------- world

/**
 * Builds the deterministic world for a seed: accounts, the first streams and
 * the simulation state. `startMs` only shifts timestamps.
 */
export function makeWorld(seed, startMs = Date.now()) {
  const rand = mulberry32(seed);
  const accounts = ACCOUNT_NAMES.map((name) => ({
    name,
    address: encodeAccountId(randBytes(rand, 32)),
  }));
  const world = {
    rand,
    accounts,
    streams: [],
    nextId: 1001,
    clockMs: startMs,
    ledger: 50_000_000 + randInt(rand, 0, 999_999),
  };
  // The first streams chain a shuffled order of the accounts (a -> b -> c -> d),
  // so every account is in at least one stream from the start.
  const order = [...accounts];
  for (let i = order.length - 1; i > 0; i--) {
    const j = randInt(rand, 0, i);
    [order[i], order[j]] = [order[j], order[i]];
  }
  for (let i = 0; i < 3; i++) world.streams.push(newStream(world, order[i], order[i + 1]));
  return world;
}

function newStream(world, sender = pick(world.rand, world.accounts), recipient = null) {
  const { rand, accounts } = world;
  while (recipient === null || recipient === sender) recipient = pick(rand, accounts);
  const token = rand() < 0.6 ? "USDC" : "XLM";
  const range = TOKENS[token];
  return {
    id: String(world.nextId++),
    sender,
    recipient,
    token,
    ratePerSecond: randStroops(rand, range.rate[0], range.rate[1], 1_000n),
    deposit: randStroops(rand, range.deposit[0], range.deposit[1], STROOPS),
    withdrawn: 0n,
    activeSeconds: 0,
    status: "new", // new | active | paused | cancelled
    startMs: null,
    lifetime: randInt(rand, 6, 14), // events before it is cancelled
    events: 0,
  };
}

/** Channel names of a stream's publications. */
export function channelsOf(stream) {
  return [`stream:${stream.id}`, `user:${stream.sender.address}`, `user:${stream.recipient.address}`];
}

/** Channel names worth watching for a seed (initial streams, then users). */
export function initialChannels(seed) {
  const world = makeWorld(seed, 0);
  return [
    ...world.streams.map((s) => `stream:${s.id}`),
    ...world.accounts.map((a) => `user:${a.address}`),
  ];
}

const accrued = (s) => minBig(s.deposit, s.ratePerSecond * BigInt(s.activeSeconds));

/**
 * Advances the simulation by one event and returns the publication:
 * {channels, event, data, stream} - `stream` is for logging only.
 */
export function nextPublication(world) {
  const { rand } = world;

  // Time passes for everybody: active streams accrue.
  const step = randInt(rand, 5, 120);
  world.clockMs += step * 1000;
  world.ledger += Math.ceil(step / LEDGER_SECONDS);
  for (const s of world.streams) if (s.status === "active") s.activeSeconds += step;

  const index = Math.floor(rand() * world.streams.length);
  const s = world.streams[index];
  const withdrawable = accrued(s) - s.withdrawn;
  const depleted = accrued(s) >= s.deposit;

  let event;
  if (s.status === "new") {
    event = "created";
  } else if (s.events >= s.lifetime) {
    event = "cancelled";
  } else if (s.status === "paused") {
    event = weighted(rand, { resumed: 8, cancelled: 1 });
  } else {
    event = weighted(rand, {
      withdrawn: withdrawable > 0n ? 6 : 0,
      topped_up: depleted ? 6 : 2,
      paused: 1,
    });
  }

  let amount = null;
  const extra = {};
  switch (event) {
    case "created":
      s.status = "active";
      s.startMs = world.clockMs;
      amount = s.deposit;
      break;
    case "withdrawn": {
      // The recipient takes 40-100% of what has streamed to them so far.
      const share = BigInt(randInt(rand, 40, 100));
      amount = (withdrawable * share) / 100n;
      if (amount <= 0n) amount = withdrawable;
      s.withdrawn += amount;
      break;
    }
    case "topped_up": {
      const range = TOKENS[s.token].deposit;
      amount = randStroops(rand, range[0] / 10n, range[1] / 10n, STROOPS / 10n);
      s.deposit += amount;
      break;
    }
    case "paused":
      s.status = "paused";
      break;
    case "resumed":
      s.status = "active";
      break;
    case "cancelled": {
      // What has streamed goes to the recipient, the rest back to the sender.
      const paidOut = accrued(s) - s.withdrawn;
      s.withdrawn += paidOut;
      amount = paidOut;
      extra.refunded = formatAmount(s.deposit - s.withdrawn);
      s.status = "cancelled";
      break;
    }
    default:
      throw new Error(`unreachable: ${event}`);
  }
  s.events++;

  const data = {
    streamId: s.id,
    sender: s.sender.address,
    recipient: s.recipient.address,
    token: s.token,
    ...(amount !== null ? { amount: formatAmount(amount) } : {}),
    ...extra,
    deposit: formatAmount(s.deposit),
    withdrawnTotal: formatAmount(s.withdrawn),
    balance: formatAmount(s.deposit - s.withdrawn),
    ratePerSecond: formatAmount(s.ratePerSecond),
    status: s.status,
    startTime: new Date(s.startMs).toISOString(),
    ledger: world.ledger,
    txHash: hex(randBytes(rand, 32)),
    at: new Date(world.clockMs).toISOString(),
  };
  const publication = { channels: channelsOf(s), event, data, stream: s };

  if (s.status === "cancelled") world.streams[index] = newStream(world);
  return publication;
}

// ---------------------------------------------------------------- HTTP

class Stopped extends Error {}

/** Sleeps `ms`, or less when `signal` aborts (then throws Stopped). */
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Stopped());
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Stopped());
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** `signal` plus a timeout (AbortSignal.any is Node >= 20.3). */
function withTimeout(signal, ms) {
  if (typeof AbortSignal.any === "function") return AbortSignal.any([signal, AbortSignal.timeout(ms)]);
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException("timeout", "TimeoutError")), ms);
  signal.addEventListener("abort", () => controller.abort(signal.reason), { once: true });
  controller.signal.addEventListener("abort", () => clearTimeout(timer), { once: true });
  return controller.signal;
}

/** A short description of a fetch failure ("ECONNREFUSED", "timeout", ...). */
function describeFetchError(err) {
  if (err?.name === "TimeoutError") return "timeout";
  const cause = err?.cause;
  return cause?.code || cause?.message || err?.message || String(err);
}

/** A refusal from the server that retrying cannot fix; its message says what to change. */
class Refused extends Error {}

/**
 * What to tell the user about a 4xx that no retry fixes (`status`, `reply`
 * the response body), or null when the answer is worth retrying (408, 429).
 */
function refusalMessage(url, status, reply) {
  if (status === 408 || status === 429) return null;
  const head = `HTTP ${status} from ${url}/v1/publish: ${reply.trim()}`;
  if (status === 401)
    return process.env.HERALD_API_KEY
      ? `${head}\nThe HERALD_API_KEY given is not the server's publish API key: use the key herald was started with.`
      : `${head}\nThe server needs the publish API key: set HERALD_API_KEY to the key herald was started with ` +
          `(its --api-key-file or HERALD_API_KEY; scripts/run-demo.sh sets it), or run herald with --insecure.`;
  return `${head}\nThe server refused the publication; retrying would not help.`;
}

/**
 * POSTs one publication until the server accepts it (HTTP 2xx). A 4xx that
 * no retry fixes throws Refused (refusalMessage()); other HTTP errors
 * are logged with their body and retried after a second; connection errors
 * (the server may still be starting) are retried with a growing delay up to
 * 5 s. Every attempt carries the same `Idempotency-Key` (docs/protocol.md
 * "Idempotent publishing"): a retry of a publish that reached the server but
 * whose reply was lost (a timeout) gets the first offsets and delivers
 * nothing twice. Throws Stopped when `signal` aborts.
 * @returns {Promise<object>} the parsed response (`{"offsets":{...}}`)
 */
async function publish(url, body, signal) {
  const text = JSON.stringify(body);
  const idempotencyKey = randomUUID(); // one per publication, kept across its retries
  let delay = 1000;
  for (;;) {
    let response;
    try {
      response = await fetch(`${url}/v1/publish`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "idempotency-key": idempotencyKey,
          // The publish API key (docs/auth.md); none when herald runs --insecure.
          ...(process.env.HERALD_API_KEY ? { authorization: `Bearer ${process.env.HERALD_API_KEY}` } : {}),
        },
        body: text,
        signal: withTimeout(signal, 10_000),
      });
    } catch (err) {
      if (signal.aborted) throw new Stopped();
      console.error(`cannot reach ${url} (${describeFetchError(err)}), retrying in ${delay / 1000}s`);
      await sleep(delay, signal);
      delay = Math.min(delay * 2, 5000);
      continue;
    }
    let reply;
    try {
      reply = await response.text();
    } catch (err) {
      if (signal.aborted) throw new Stopped();
      reply = `<body unreadable: ${describeFetchError(err)}>`;
    }
    if (response.ok) {
      try {
        return JSON.parse(reply);
      } catch {
        return { raw: reply };
      }
    }
    if (response.status >= 400 && response.status < 500) {
      const message = refusalMessage(url, response.status, reply);
      if (message) throw new Refused(message);
    }
    console.error(`HTTP ${response.status} from ${url}/v1/publish: ${reply.trim()}; retrying in 1s`);
    await sleep(1000, signal);
    delay = 1000;
  }
}

function logLine(pub, reply) {
  const { data, event } = pub;
  const what = data.amount !== undefined ? ` ${data.amount} ${data.token}` : "";
  const offsets = JSON.stringify(reply?.offsets ?? reply);
  return `stream:${data.streamId} ${event}${what} -> offsets ${offsets}`;
}

// ---------------------------------------------------------------- main

async function main(argv) {
  let opts;
  try {
    opts = parseArgs(argv);
  } catch (err) {
    console.error(`${err.message}\n${USAGE}`);
    return 2;
  }
  if (opts.help) {
    console.log(USAGE);
    return 0;
  }
  if (opts.printChannels) {
    for (const channel of initialChannels(opts.seed)) console.log(channel);
    return 0;
  }

  const stop = new AbortController();
  let signals = 0;
  const onSignal = (name) => {
    if (++signals > 1) process.exit(130); // second Ctrl-C: leave at once
    console.error(`${name}: stopping`);
    stop.abort();
  };
  process.on("SIGINT", () => onSignal("SIGINT"));
  process.on("SIGTERM", () => onSignal("SIGTERM"));

  const world = makeWorld(opts.seed);
  console.log(
    `publishing to ${opts.url}/v1/publish every ${opts.intervalMs} ms (seed ${opts.seed}, ` +
      `${opts.count ? `${opts.count} events` : "until stopped"})`,
  );
  for (const a of world.accounts) console.log(`  ${a.name.padEnd(5)} user:${a.address}`);

  let published = 0;
  try {
    while (opts.count === 0 || published < opts.count) {
      const pub = nextPublication(world);
      const reply = await publish(
        opts.url,
        { channels: pub.channels, event: pub.event, data: pub.data },
        stop.signal,
      );
      published++;
      console.log(logLine(pub, reply));
      if (opts.count === 0 || published < opts.count) await sleep(opts.intervalMs, stop.signal);
    }
  } catch (err) {
    if (err instanceof Refused) {
      console.error(err.message);
      console.error(`stopped after ${published} event${published === 1 ? "" : "s"}`);
      return 1;
    }
    if (!(err instanceof Stopped)) throw err;
  }
  console.log(`published ${published} event${published === 1 ? "" : "s"}`);
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      console.error(err?.stack || String(err));
      process.exitCode = 1;
    },
  );
}
