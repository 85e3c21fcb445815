// A loopback TCP proxy the e2e suites put between a client and Herald to cut,
// stall or throttle its connections.

import net from "node:net";
import { fileURLToPath } from "node:url";

import { spawnProcess } from "./processes.mjs";

// Throttled pairs: the proxy holds at most this much read from Herald and
// not yet passed on (then it stops reading, and the kernel's buffers and
// Herald's queue fill), and passes bytes on every TICK_MS.
const THROTTLE_HOLD_BYTES = 4096;
const TICK_MS = 20;

/**
 * Passes what `upstream` sends to `client` at `rate()` bytes per second at
 * most (null: as fast as it comes), reading from `upstream` only while it
 * holds less than THROTTLE_HOLD_BYTES. Returns {stop()}.
 */
function throttledPipe(upstream, client, rate, counters) {
  const held = [];
  let heldBytes = 0;
  let budget = 0;
  let last = Date.now();
  upstream.on("data", (chunk) => {
    held.push(chunk);
    heldBytes += chunk.length;
    if (heldBytes >= THROTTLE_HOLD_BYTES) upstream.pause();
    pump();
  });
  function pump() {
    const now = Date.now();
    const r = rate();
    // At most 100 ms of budget saved up: no bursts after an idle spell.
    budget = r === null ? Infinity : Math.min(budget + ((now - last) * r) / 1000, r / 10);
    last = now;
    while (held.length > 0 && budget >= 1) {
      let chunk = held[0];
      if (chunk.length > budget) {
        held[0] = chunk.subarray(Math.floor(budget));
        chunk = chunk.subarray(0, Math.floor(budget));
      } else {
        held.shift();
      }
      heldBytes -= chunk.length;
      budget -= chunk.length;
      counters.bytes += chunk.length;
      if (!client.destroyed) client.write(chunk);
    }
    if (heldBytes < THROTTLE_HOLD_BYTES && upstream.isPaused() && !upstream.destroyed) upstream.resume();
  }
  const timer = setInterval(pump, TICK_MS);
  upstream.on("end", () => {
    clearInterval(timer);
    const flush = setInterval(() => {
      pump();
      if (held.length === 0) {
        clearInterval(flush);
        client.end();
      }
    }, TICK_MS);
  });
  return { stop: () => clearInterval(timer) };
}

/** A TCP proxy in front of `port`: `drop()` cuts every connection through it
 * (the SDK sees its transport close and reconnects through the proxy);
 * `retarget(port)` sends new connections to another port (a load balancer
 * whose backend changed);
 * `pauseUpstream()` / `resumeUpstream()` stop and restart reading from Herald.
 * With `bytesPerSecond` (e.g. 4000: 32 kbit/s) every connection passes what
 * Herald sends on at that rate at most, reading from Herald only as fast
 * (a slow link); `setRate(n)` changes it for every connection (null: no
 * limit), `bytesPassed()` counts what went to the clients that way. */
export async function startProxy(port, { bytesPerSecond } = {}) {
  const pairs = new Set();
  let paused = false;
  let target = port;
  let rate = bytesPerSecond ?? null;
  const throttled = bytesPerSecond !== undefined;
  const counters = { bytes: 0 };
  const server = net.createServer((client) => {
    const upstream = net.connect(target, "127.0.0.1");
    const pair = { client, upstream };
    pairs.add(pair);
    client.pipe(upstream);
    if (throttled) pair.throttle = throttledPipe(upstream, client, () => rate, counters);
    else upstream.pipe(client);
    if (paused) upstream.pause();
    const end = () => {
      pairs.delete(pair);
      pair.throttle?.stop();
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end);
    upstream.on("error", end);
    client.on("close", end);
    upstream.on("close", end);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: server.address().port,
    retarget(p) {
      target = p;
    },
    setRate(bps) {
      rate = bps;
    },
    bytesPassed: () => counters.bytes,
    drop() {
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      pairs.clear();
    },
    pauseUpstream() {
      paused = true;
      for (const { upstream } of pairs) {
        upstream.unpipe();
        upstream.pause();
      }
    },
    resumeUpstream() {
      paused = false;
      for (const { client, upstream } of pairs) {
        if (!throttled) upstream.pipe(client);
        upstream.resume();
      }
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/**
 * A slow link in front of `port` (slow_link.py, python3): what Herald sends
 * passes at `bytesPerSecond` at most, through a connection with a 1400-byte
 * MSS and an 8 KiB receive buffer, as over a narrow network link rather
 * than loopback. Returns {port, bytesPassed(), close()}; bytesPassed()
 * counts each connection's bytes once it ended.
 */
export async function startSlowLink(port, bytesPerSecond) {
  const script = fileURLToPath(new URL("./slow_link.py", import.meta.url));
  // Registered: the test process's exit hook stops it by PID if a test does not.
  const child = spawnProcess("python3", [script, String(port), String(bytesPerSecond)], {
    stdio: ["ignore", "pipe", "inherit"],
  }, "slow_link.py");
  let passed = 0;
  const listening = await new Promise((resolve, reject) => {
    let text = "";
    child.stdout.on("data", (d) => {
      text += d.toString();
      let nl;
      while ((nl = text.indexOf("\n")) >= 0) {
        const line = text.slice(0, nl);
        text = text.slice(nl + 1);
        const m = /^listening (\d+)/.exec(line);
        if (m) resolve(Number(m[1]));
        const b = /^bytes (\d+)/.exec(line);
        if (b) passed += Number(b[1]);
      }
    });
    child.once("exit", (code) => reject(new Error(`slow_link.py exited (${code})`)));
  });
  return {
    port: listening,
    bytesPassed: () => passed,
    /** Stops the proxy (by its PID) and waits for it. */
    close: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
}
