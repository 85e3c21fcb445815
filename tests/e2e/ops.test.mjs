// Operating herald (README "Configuration", "Operations"): the real binary's
// configuration sources, build info line, JSON logs under a flood of bad
// clients, and graceful shutdown (readyz 503 at once, no new connections,
// WebSocket close 1012 "service restart", SSE retry hint + herald.shutdown,
// queued publications flushed, exit 0 within --shutdown-timeout).

import assert from "node:assert/strict";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";

import { HERALD_BIN, publishOk, sleep, SseParser, startHerald, waitUntil } from "./lib/herald.mjs";
import { freePort, spawnProcess, tempDir } from "./lib/processes.mjs";
import { wsConnect, wsSubscribe } from "./lib/ws.mjs";

// Runs herald to completion (print-only commands, start-up errors).
function runHerald(args, env = {}, { timeoutMs = 10_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawnProcess(
      HERALD_BIN,
      args,
      { cwd: os.tmpdir(), env: { PATH: process.env.PATH, ...env }, stdio: ["ignore", "pipe", "pipe"] },
      "herald",
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => (stdout += c));
    child.stderr.on("data", (c) => (stderr += c));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`herald ${args.join(" ")} did not exit within ${timeoutMs} ms`));
    }, timeoutMs);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

// One request on its own connection (node:http: fetch refuses some ports).
function request(url, { method = "GET", body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, agent: false }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const tmp = tempDir("herald-ops-"); // removed when the test process exits

describe("configuration and build info", () => {
  test("herald version and --version print one build-info line", async () => {
    for (const args of [["version"], ["--version"]]) {
      const r = await runHerald(args);
      assert.equal(r.code, 0, r.stderr);
      const lines = r.stdout.trim().split("\n");
      assert.equal(lines.length, 1);
      assert.match(lines[0], /^herald \d+\.\d+\.\d+ \(commit ([0-9a-f]{7,40}|unknown), /);
      assert.match(lines[0], /CAF 0\.17\.\d+, Boost 1\.\d+\.\d+/);
    }
  });

  test("--help lists every option with its default and environment variable", async () => {
    const r = await runHerald(["--help"]);
    assert.equal(r.code, 0);
    for (const [opt, env] of [
      ["--client-max-buffer", "HERALD_CLIENT_MAX_BUFFER"],
      ["--scheduler.max-threads", "HERALD_SCHEDULER_MAX_THREADS"],
      ["--shutdown-timeout", "HERALD_SHUTDOWN_TIMEOUT"],
      ["--log-format", "HERALD_LOG_FORMAT"],
    ]) {
      assert.ok(r.stdout.includes(opt), opt);
      assert.ok(r.stdout.includes(`env ${env}`), env);
    }
    assert.match(r.stdout, /default 8080; env HERALD_PORT or PORT/);
  });

  test("precedence on the real binary: command line > environment > file > default", async () => {
    const ini = path.join(tmp, "prec.ini");
    writeFileSync(ini, '[global]\nhistory-size=11\nhistory-ttl=12\nhost="127.0.0.9"\n[scheduler]\nmax-threads=3\n');
    const r = await runHerald(["--dump-config", `--config-file=${ini}`, "--history-size=33"], {
      HERALD_HISTORY_SIZE: "22",
      HERALD_HISTORY_TTL: "23",
      HERALD_SCHEDULER_MAX_THREADS: "1",
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^history-size=33$/m); // CLI
    assert.match(r.stdout, /^history-ttl=23$/m); // env over file
    assert.match(r.stdout, /^host="127.0.0.9"$/m); // file over default
    assert.match(r.stdout, /^max-threads=1$/m); // CAF option from env
    assert.match(r.stdout, /^port=8080$/m); // default
  });

  test("a server configured only through HERALD_* variables runs with them", async () => {
    const port = await freePort();
    const child = spawnProcess(
      HERALD_BIN,
      [],
      {
        cwd: tmp,
        env: { PATH: process.env.PATH, HERALD_HOST: "127.0.0.1", HERALD_PORT: String(port), HERALD_LOG_FORMAT: "json", HERALD_INSECURE: "true" },
        stdio: ["ignore", "pipe", "pipe"],
      },
      "herald",
    );
    let out = "";
    child.stdout.on("data", (c) => (out += c));
    child.stderr.on("data", (c) => (out += c));
    try {
      await waitUntil(() => out.includes("listening on"), { timeoutMs: 10_000, what: "listening" });
      const res = await request(`http://127.0.0.1:${port}/healthz`);
      assert.equal(res.status, 200);
    } finally {
      child.kill("SIGTERM");
      const [code] = await once(child, "exit");
      assert.equal(code, 0);
    }
    for (const line of out.trim().split("\n")) JSON.parse(line); // json from the environment
  });

  test("bad values stop start-up naming the option and its source", async () => {
    const ini = path.join(tmp, "bad.ini");
    writeFileSync(ini, "[global]\nclient-max-buffer=-1\n");
    const cases = [
      [["--port=abc"], {}, /--port \(command line\)/],
      [["--nope=1"], {}, /unknown option --nope \(command line\)/],
      [[], { HERALD_WS_PING_INTERVAL: "soon" }, /--ws-ping-interval \(environment variable HERALD_WS_PING_INTERVAL\)/],
      [[], { PORT: "99999" }, /--port \(environment variable PORT\)/],
      [[`--config-file=${ini}`], {}, new RegExp(`bad value '-1' for client-max-buffer: expected uint64 \\(config file ${ini}, line 2\\)`)],
      [[], { HERALD_SHUTDOWN_TIMEOUT: "0" }, /--shutdown-timeout must be 1-3600 seconds \(from environment variable HERALD_SHUTDOWN_TIMEOUT\)/],
    ];
    for (const [args, env, pattern] of cases) {
      const r = await runHerald(args, env);
      assert.notEqual(r.code, 0, `${args} ${JSON.stringify(env)} should fail`);
      assert.match(r.stderr, pattern);
    }
  });

  test("every problem in one run: a parse error and value errors together", async () => {
    const r = await runHerald(["--history-size=0", "--bogus=1"], {});
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /unknown option --bogus \(command line\)/);
    assert.match(r.stderr, /--history-size must be greater than 0 \(from command line\)/);
  });

  test("--dump-config redacts secrets and URL passwords", async () => {
    const r = await runHerald(["--dump-config"], { HERALD_REDIS_URL: "redis://:pa55word@127.0.0.1:1" });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!r.stdout.includes("pa55word"));
    assert.match(r.stdout, /^redis-url="redis:\/\/:\*\*\*@127\.0\.0\.1:1"$/m);
  });
});

describe("JSON logs under a flood of bad clients", () => {
  test("bounded number of lines, each one JSON, no token value", { timeout: 60_000 }, async () => {
    const h = await startHerald(["--log-format=json", "--log-client-rate=5"]);
    const SECRET = "tok3n-s3cr3t-value";
    const started = Date.now();
    const requests = [];
    for (let i = 0; i < 300; i++) {
      const kind = i % 3;
      const target =
        kind === 0
          ? `/no-such-route?token=${SECRET}`
          : kind === 1
            ? `/v1/sse?channel=not%20a%20channel&token=${SECRET}`
            : `/v1/sse?token=${SECRET}`;
      requests.push(request(`${h.url}${target}`));
    }
    requests.push(
      request(`${h.url}/v1/publish?token=${SECRET}`, { method: "POST", body: `{"bad json ${SECRET}` }),
    );
    await Promise.all(requests);
    const floodSeconds = Math.ceil((Date.now() - started) / 1000) + 1;
    // The limiter reports what it dropped within a second.
    await waitUntil(() => /suppressed \d+ log line/.test(h.log()), { timeoutMs: 3000, what: "suppressed line" });
    await h.stop();
    const lines = h.log().trim().split("\n");
    const objects = lines.map((l) => {
      try {
        return JSON.parse(l);
      } catch {
        assert.fail(`not a JSON line: ${l}`);
      }
    });
    for (const o of objects) {
      assert.equal(typeof o.time, "string");
      assert.equal(typeof o.level, "string");
      assert.equal(typeof o.msg, "string");
    }
    const refused = objects.filter((o) => o.kind === "bad_request" && o.msg === "request refused");
    assert.ok(refused.length >= 1, "bad requests are logged");
    assert.ok(refused.length <= 5 * (floodSeconds + 1), `${refused.length} lines for ${floodSeconds} s`);
    const suppressed = objects.filter((o) => o.kind === "bad_request" && typeof o.suppressed === "number");
    assert.ok(suppressed.length >= 1);
    assert.equal(
      refused.length + suppressed.reduce((n, o) => n + o.suppressed, 0),
      301,
      "every refusal is either logged or counted",
    );
    assert.ok(lines.length < 100, `${lines.length} log lines`);
    const all = h.log();
    assert.ok(!all.includes(SECRET), "a token value reached the log");
    assert.ok(!all.includes("token="), "a query string reached the log");
  });
});

// --------------------------------------------------------- graceful shutdown

/** An SSE subscription over node:http: parsed events, retry hints, end. */
function sseOpen(url) {
  const events = [];
  const retries = [];
  const parser = new SseParser({ onEvent: (e) => events.push(e), onRetry: (ms) => retries.push(ms) });
  let res;
  const ended = new Promise((resolve) => {
    const req = http.get(url, { agent: false }, (r) => {
      res = r;
      r.setEncoding("utf8");
      r.on("data", (t) => parser.feed(t));
      r.on("end", () => resolve("end"));
      r.on("error", () => resolve("error"));
      r.on("close", () => resolve("close"));
    });
    req.on("error", () => resolve("error"));
  });
  return { events, retries, ended, pause: () => res?.pause(), resume: () => res?.resume(), status: () => res?.statusCode };
}

/** A raw kept-alive HTTP/1.1 connection: send one request, read one response head. */
async function keptAlive(port) {
  const socket = net.connect({ host: "127.0.0.1", port });
  await once(socket, "connect");
  let buf = "";
  socket.on("data", (c) => (buf += c));
  socket.on("error", () => {});
  return {
    async get(target) {
      buf = "";
      socket.write(`GET ${target} HTTP/1.1\r\nHost: x\r\n\r\n`);
      await waitUntil(() => /\r\n\r\n/.test(buf), { timeoutMs: 3000, what: `response to ${target}` });
      return Number(/^HTTP\/1\.1 (\d+)/.exec(buf)[1]);
    },
    close: () => socket.destroy(),
  };
}

function connectRefused(port) {
  return new Promise((resolve) => {
    const s = net.connect({ host: "127.0.0.1", port });
    s.once("connect", () => {
      s.destroy();
      resolve(false);
    });
    s.once("error", (err) => resolve(err.code === "ECONNREFUSED"));
  });
}

describe("graceful shutdown", () => {
  test("SIGTERM: readyz 503, no new connections, queues flushed, WS 1012, SSE retry + herald.shutdown, exit 0", { timeout: 60_000 }, async () => {
    const h = await startHerald(["--shutdown-timeout=8", "--shutdown-retry-ms=250", "--client-max-buffer=33554432"]);
    const CH = "stream:shutdown-1";
    const sse = sseOpen(`${h.url}/v1/sse?channel=${CH}`);
    const ws = await wsConnect(h.url);
    assert.equal((await wsSubscribe(ws, CH)).op, "subscribed");
    await waitUntil(() => sse.status() === 200, { what: "SSE open" });
    // Probe until the SSE subscription is live.
    await waitUntil(
      async () => {
        await publishOk(h.url, { channel: CH, event: "warm", data: {} });
        return sse.events.some((e) => e.event === "warm");
      },
      { what: "SSE subscribed" },
    );
    const probe = await keptAlive(h.port);
    assert.equal(await probe.get("/readyz"), 200);

    // Both clients stop reading; 40 publications of ~60 KB queue up behind
    // the socket buffers.
    ws.ws._socket.pause();
    sse.pause();
    const big = "x".repeat(60_000);
    const N = 40;
    for (let i = 1; i <= N; i++) await publishOk(h.url, { channel: CH, event: "big", data: { i, big } });

    const t0 = Date.now();
    process.kill(h.pid, "SIGTERM");
    // At once: not ready, and no new connections.
    await waitUntil(async () => (await probe.get("/readyz")) === 503, { timeoutMs: 2000, what: "readyz 503" });
    assert.ok(await connectRefused(h.port), "new connections are refused");
    // Now the clients read again: everything queued arrives, then the close.
    await sleep(300);
    ws.ws._socket.resume();
    sse.resume();
    const closed = await ws.closed;
    assert.equal(closed.code, 1012);
    assert.equal(closed.reason, "service restart");
    const wsBig = ws.inbox.items.filter((m) => m.op === "publication" && m.event === "big").map((m) => m.data.i);
    assert.deepEqual(wsBig, Array.from({ length: N }, (_, k) => k + 1));

    await sse.ended;
    const sseBig = sse.events.filter((e) => e.event === "big").map((e) => JSON.parse(e.data).i);
    assert.deepEqual(sseBig, Array.from({ length: N }, (_, k) => k + 1));
    const last = sse.events.at(-1);
    assert.equal(last.event, "herald.shutdown");
    assert.deepEqual(JSON.parse(last.data), { reason: "shutdown", retry_ms: 250 });
    assert.equal(last.id, undefined, "the shutdown event keeps the cursor of the last publication");
    assert.equal(sse.retries.at(-1), 250);

    const [code] = h.process.exitCode !== null ? [h.process.exitCode] : await once(h.process, "exit");
    assert.equal(code, 0);
    assert.ok(Date.now() - t0 < 8000, "exited before the shutdown timeout");
    probe.close();
    assert.match(h.log(), /shutting down/);
    assert.match(h.log(), /stopped/);
  });

  test("SIGTERM closes the connections in batches spread over --shutdown-drain-window", { timeout: 60_000 }, async () => {
    // Issue #24: an instance that closed all its connections at once would
    // send them all to the other instances in the same second.
    const h = await startHerald(["--shutdown-timeout=8", "--shutdown-drain-window=1500"]);
    const CH = "stream:shutdown-drain";
    const N = 40;
    const clients = [];
    for (let i = 0; i < N; i++) {
      const c = await wsConnect(h.url);
      assert.equal((await wsSubscribe(c, CH)).op, "subscribed");
      clients.push(c);
    }
    const t0 = Date.now();
    const closedAt = clients.map((c) => c.closed.then((e) => ({ at: Date.now() - t0, code: e.code })));
    process.kill(h.pid, "SIGTERM");
    const closes = await Promise.all(closedAt);
    assert.ok(closes.every((c) => c.code === 1012), `close codes ${closes.map((c) => c.code)}`);
    const times = closes.map((c) => c.at).sort((a, b) => a - b);
    const spread = times.at(-1) - times[0];
    // One batch every 50 ms over 1.5 s: the last close comes more than a
    // second after the first, and no more than a few close together.
    assert.ok(spread >= 1000, `closes spread over ${spread} ms (${times})`);
    const first300 = times.filter((t) => t - times[0] < 300).length;
    assert.ok(first300 <= N / 3, `${first300} of ${N} closed in the first 300 ms (${times})`);
    const [code] = h.process.exitCode !== null ? [h.process.exitCode] : await once(h.process, "exit");
    assert.equal(code, 0);
    assert.match(h.log(), /closing connections/);
  });

  test("clients that leave on their own during the drain let it end early, cleanly", { timeout: 60_000 }, async () => {
    // The drain's pacing timer is still pending when the last connection
    // goes: the process stops at once and leaves nothing behind (the ASan
    // stage fails on any leak or use after free at exit).
    const h = await startHerald(["--shutdown-timeout=8", "--shutdown-drain-window=3000"]);
    const clients = [];
    for (let i = 0; i < 20; i++) {
      const c = await wsConnect(h.url);
      assert.equal((await wsSubscribe(c, "stream:shutdown-leave")).op, "subscribed");
      clients.push(c);
    }
    const t0 = Date.now();
    process.kill(h.pid, "SIGTERM");
    await waitUntil(() => /closing connections/.test(h.log()), { timeoutMs: 2000, what: "the drain began" });
    for (const c of clients) c.ws.terminate();
    const [code] = h.process.exitCode !== null ? [h.process.exitCode] : await once(h.process, "exit");
    assert.equal(code, 0);
    const took = Date.now() - t0;
    assert.ok(took < 2500, `exited ${took} ms after SIGTERM, before the 3 s drain window ended`);
  });

  test("a client that never reads does not hold the exit beyond --shutdown-timeout", { timeout: 30_000 }, async () => {
    const h = await startHerald(["--shutdown-timeout=2", "--client-max-buffer=33554432"]);
    const CH = "stream:shutdown-2";
    const ws = await wsConnect(h.url);
    assert.equal((await wsSubscribe(ws, CH)).op, "subscribed");
    ws.ws._socket.pause();
    const big = "y".repeat(60_000);
    for (let i = 0; i < 150; i++) await publishOk(h.url, { channel: CH, event: "big", data: { i, big } });
    const t0 = Date.now();
    process.kill(h.pid, "SIGTERM");
    const [code] = await once(h.process, "exit");
    const took = Date.now() - t0;
    assert.equal(code, 0);
    assert.ok(took >= 1500 && took < 5000, `exit after ${took} ms (timeout 2 s)`);
    ws.ws.terminate();
  });
});
