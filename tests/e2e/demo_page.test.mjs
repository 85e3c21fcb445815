// The demo viewer page (GET /demo, demo/viewer.html) in a real headless
// Chromium driven by playwright-core: it connects with EventSource, shows
// each publication as a row (event name, channel, data, cursor), highlights
// the herald.gap event that follows a reconnection the server cannot
// recover, and says why a stream ended (a refusal, herald.token_expired,
// herald.shutdown). Also demo/publisher.mjs: it stops with a clear message
// on a 401 instead of retrying forever.
//
// Uses the system Chromium (/usr/bin/chromium, or $HERALD_CHROMIUM);
// playwright-core never downloads a browser. A screenshot of the page after
// the gap test goes to /tmp/demo-page.png (or $HERALD_DEMO_SCREENSHOT).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { browserSuite, newPage } from "./lib/browser.mjs";
import { accountId, channelOfEvent, parseCursor, pollUntil, publishOk, startHerald } from "./lib/herald.mjs";
import { hsSetup, nowS } from "./lib/tokens.mjs";

const PUBLISHER = fileURLToPath(new URL("../../demo/publisher.mjs", import.meta.url));

const SCREENSHOT = process.env.HERALD_DEMO_SCREENSHOT || "/tmp/demo-page.png";
const HISTORY_SIZE = 2;
const RUN = `e2e-${process.pid}-${Date.now().toString(36)}`; // makes the data of this run distinctive

/** Every console error and page error, tagged with the test that saw it. */
const consoleErrors = [];
/** Console errors for GET /favicon.ico (checked by their own test). */
const faviconErrors = [];

const fx = browserSuite([`--history-size=${HISTORY_SIZE}`], { timeoutMs: 5000 });
const { herald } = fx;

/** A new page (own context) whose console errors and uncaught exceptions are collected. */
function newTestPage(testName) {
  return newPage(fx.browser, {
    viewport: { width: 1200, height: 700 },
    timeoutMs: 5000,
    onError: ({ text, url }) => (/\/favicon\.ico$/.test(url) ? faviconErrors : consoleErrors).push({ test: testName, text, url }),
  });
}

/** The rows of the viewer, oldest first: {cls, event, channel, data, id, background}. */
function rowsOf(page) {
  return page.$$eval("#rows tr", (trs) =>
    trs
      .map((tr) => ({
        cls: tr.className,
        event: tr.querySelector("td.event").textContent,
        channel: tr.querySelector("td.channel").textContent,
        data: tr.querySelector("td.data").textContent,
        id: tr.querySelector("td.id").textContent,
        background: getComputedStyle(tr.querySelector("td.event")).backgroundColor,
      }))
      .reverse(),
  );
}

/** Waits until the state badge says "connected" (EventSource open). */
async function waitConnected(page) {
  await page.waitForFunction(
    () => {
      const el = document.getElementById("state");
      return el.classList.contains("open") && el.textContent === "connected";
    },
    null,
    { timeout: 5000 },
  );
}

/** Polls the rows until `pred(rows)` holds; returns the rows. */
function waitRows(page, pred, what, timeoutMs = 5000) {
  return pollUntil(() => rowsOf(page), pred, { what, timeoutMs, show: (last) => `rows: ${JSON.stringify(last ?? [], null, 1)}` });
}

/** Parsed JSON data of a row (the page pretty-prints it). */
const dataOf = (row) => JSON.parse(row.data);

/**
 * A loopback TCP proxy in front of herald, to cut the browser's connections
 * as a network drop would (closing them under EventSource, which then
 * reconnects with Last-Event-ID by itself) and to refuse connections while
 * "down".
 */
async function startProxy(targetPort) {
  const sockets = new Set();
  let down = false;
  const server = net.createServer((client) => {
    client.on("error", () => {});
    if (down) {
      client.destroy();
      return;
    }
    const upstream = net.connect(targetPort, "127.0.0.1");
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  server.listen(0, "127.0.0.1");
  await new Promise((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    /** Closes every proxied connection and refuses new ones until up(). */
    down() {
      down = true;
      for (const s of sockets) s.destroy();
    },
    up() {
      down = false;
    },
    close() {
      down = true;
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

// Worst case: 15 s + 35 s + 10 s (hooks and suite bounded), typically about 8.5 s.
describe("demo viewer page", { timeout: 35_000 }, () => {
  test("prefills the channels, connects, and shows each publication as a row", { timeout: 15_000 }, async () => {
    const stream = "stream:demo-1";
    const user = `user:${accountId(101)}`;
    const { context, page } = await newTestPage("publications");
    try {
      await page.goto(`${herald.url}/demo?channels=${stream},${user}`, { timeout: 5000 });
      await waitConnected(page);
      assert.equal(await page.inputValue("#channels"), `${stream}, ${user}`);
      assert.equal(await page.isVisible("#empty"), true, "'No events yet.' before any event");

      // Three publications: one per channel, then one naming both channels
      // (one publication per channel: two events on this connection).
      const published = [
        { channel: stream, event: "created", data: { tag: `${RUN}-alpha`, amount: "12.5000000" } },
        { channel: user, event: "withdrawn", data: { tag: `${RUN}-bravo`, note: "ünïcødé ✓ <b>not html</b>" } },
        { channels: [stream, user], event: "topped_up", data: { tag: `${RUN}-charlie`, list: [1, 2, 3] } },
      ];
      for (const body of published) await publishOk(herald.url, body);

      const mine = (rows) => rows.filter((r) => r.data.includes(RUN));
      const rows = mine(await waitRows(page, (rs) => mine(rs).length >= 4, "4 rows with this run's data"));
      assert.deepEqual(
        rows.map((r) => [r.event, dataOf(r)]),
        [
          ["created", published[0].data],
          ["withdrawn", published[1].data],
          ["topped_up", published[2].data],
          ["topped_up", published[2].data],
        ],
        "rows, oldest first: event name and data as published",
      );
      // Each row names its channel (the page subscribes with envelope=1): the
      // publication to both channels is one row per channel.
      assert.deepEqual(rows.slice(0, 2).map((r) => r.channel), [stream, user]);
      assert.deepEqual(rows.slice(2).map((r) => r.channel).sort(), [stream, user].sort());
      // The data is shown as text (pretty-printed JSON), never as HTML.
      assert.equal(await page.locator("#rows b").count(), 0);
      assert.match(rows[0].data, /"tag": "e2e-.*-alpha"/);

      // The id column is the SSE cursor: one entry per channel; the two
      // topped_up rows are the publication on each channel. Order is kept per
      // channel only: the two channels of one publication fan out side by side,
      // so its two rows may come in either order (docs/protocol.md).
      for (const r of rows) assert.equal(parseCursor(r.id).length, 2, `cursor of ${r.event}: ${r.id}`);
      assert.equal(channelOfEvent(rows[0].id, rows[1].id, [stream, user]), user);
      const toppedUp = [channelOfEvent(rows[1].id, rows[2].id, [stream, user]), channelOfEvent(rows[2].id, rows[3].id, [stream, user])];
      assert.deepEqual(toppedUp.sort(), [stream, user].sort(), "one topped_up row per channel");
      assert.deepEqual(toppedUp, [rows[2].channel, rows[3].channel], "the channel column agrees with the cursor");

      assert.equal(await page.isVisible("#empty"), false, "'No events yet.' hidden once rows exist");
      assert.equal(await page.locator("#rows tr.gap").count(), 0, "no gap without reconnection");
      assert.equal(await page.textContent("#state"), "connected");
    } finally {
      await context.close();
    }
    assert.deepEqual(
      consoleErrors.filter((e) => e.test === "publications"),
      [],
      "no console errors or uncaught exceptions",
    );
  });

  test(
    `highlights herald.gap after a network drop longer than the history (--history-size=${HISTORY_SIZE})`,
    { timeout: 20_000 },
    async () => {
      const stream = "stream:demo-2";
      const user = `user:${accountId(202)}`;
      const proxy = await startProxy(herald.port);
      const { context, page } = await newTestPage("gap");
      try {
        await page.goto(`${proxy.url}/demo?channels=${stream},${user}`, { timeout: 5000 });
        await waitConnected(page);

        // Received live: stream offsets 1 and 2, user offset 1 (the user
        // channel keeps that in its history, so its epoch survives the drop).
        await publishOk(herald.url, { channels: [stream, user], event: "created", data: { tag: `${RUN}-before-1` } });
        await publishOk(herald.url, { channel: stream, event: "paused", data: { tag: `${RUN}-before-2` } });
        await waitRows(page, (rs) => rs.filter((r) => r.data.includes(`${RUN}-before`)).length === 3, "3 rows before the drop");

        // Network drop: EventSource notices and retries (retry: 2000) while
        // three publications go by; the channel keeps only the last two.
        proxy.down();
        await page.waitForFunction(() => document.getElementById("state").textContent === "reconnecting", null, {
          timeout: 5000,
        });
        for (let i = 1; i <= 3; i++) {
          await publishOk(herald.url, { channel: stream, event: "withdrawn", data: { tag: `${RUN}-missed-${i}` } });
        }
        proxy.up();

        // The browser reconnects with Last-Event-ID: stream offset 3 is gone
        // from history, so the server says so with a herald.gap event.
        const withGap = await waitRows(page, (rs) => rs.some((r) => r.event === "herald.gap"), "a herald.gap row", 10_000);
        await waitConnected(page);
        await publishOk(herald.url, { channel: stream, event: "resumed", data: { tag: `${RUN}-after-1` } });
        const rows = await waitRows(page, (rs) => rs.some((r) => r.data.includes(`${RUN}-after-1`)), "the row after the gap");

        const gaps = rows.filter((r) => r.event === "herald.gap");
        assert.equal(gaps.length, 1, `one gap row: ${JSON.stringify(withGap)}`);
        const gap = gaps[0];
        assert.deepEqual(dataOf(gap), { channel: stream, reason: "history_expired" });
        assert.equal(gap.channel, stream, "the gap row names its channel");
        assert.equal(gap.cls, "gap", "the gap row is marked");
        assert.equal(gap.background, "rgb(58, 42, 16)", "the gap row is highlighted (#3a2a10)");
        for (const r of rows.filter((x) => x.event !== "herald.gap")) {
          assert.equal(r.cls, "", `${r.event} row not marked as a gap`);
          assert.notEqual(r.background, gap.background, `${r.event} row not highlighted`);
        }
        // Unrecoverable: nothing missed is replayed; the order is
        // before, before, before, gap, live.
        assert.deepEqual(
          rows.map((r) => [r.event, r.event === "herald.gap" ? r.data.includes("history_expired") : dataOf(r).tag]),
          [
            ["created", `${RUN}-before-1`],
            ["created", `${RUN}-before-1`],
            ["paused", `${RUN}-before-2`],
            ["herald.gap", true],
            ["resumed", `${RUN}-after-1`],
          ],
        );
        assert.equal(await page.textContent("#state"), "connected");
        await page.screenshot({ path: SCREENSHOT, fullPage: true, timeout: 5000 });
      } finally {
        await context.close();
        await proxy.close();
      }
      assert.deepEqual(
        consoleErrors.filter((e) => e.test === "gap"),
        [],
        "no console errors or uncaught exceptions",
      );
    },
  );

  // Without a declared icon Chromium asks for /favicon.ico, gets herald's 404
  // and logs it as a console error; the page declares an empty data: icon.
  test(
    "loads without a console error for /favicon.ico",
    () => {
      assert.deepEqual(faviconErrors, []);
    },
  );
});

/** The text of the page's info line. */
const infoOf = (page) => page.textContent("#info");

// The page against a herald with real keys: why a stream ended. Its own
// herald (stopped by the shutdown test) and its own pages.
describe("demo viewer page: why a stream ended", { timeout: 40_000 }, () => {
  const s = hsSetup();
  let h = null;
  before(async () => {
    h = await startHerald([...s.args, "--jwt-leeway=1", "--shutdown-retry-ms=700"], { insecure: false });
  });
  after(async () => {
    await h?.stop();
  });

  test("a refused request shows the server's error, not a guess", { timeout: 10_000 }, async () => {
    const { context, page } = await newTestPage("refused");
    try {
      await page.goto(`${h.url}/demo?channels=stream:demo-refused&token=not-a-jwt`, { timeout: 5000 });
      await page.waitForFunction(() => /Connection refused: HTTP/.test(document.getElementById("info").textContent), null, {
        timeout: 5000,
      });
      const text = await infoOf(page);
      assert.match(text, /Connection refused: HTTP 401 unauthorized/);
      assert.doesNotMatch(text, /check the channel names/);
      assert.equal(await page.textContent("#state"), "closed");
    } finally {
      await context.close();
    }
  });

  test("shows herald.token_expired and says the token expired", { timeout: 15_000 }, async () => {
    const stream = "stream:demo-expiry";
    const { context, page } = await newTestPage("token_expired");
    try {
      const token = s.token({ sub: accountId(303), exp: nowS() + 2 });
      await page.goto(`${h.url}/demo?channels=${stream}&token=${token}`, { timeout: 5000 });
      await waitConnected(page);
      const rows = await waitRows(page, (rs) => rs.some((r) => r.event === "herald.token_expired"), "a herald.token_expired row", 10_000);
      const ended = rows.find((r) => r.event === "herald.token_expired");
      assert.deepEqual(dataOf(ended), { reason: "token_expired" });
      assert.equal(ended.cls, "ending");
      await page.waitForFunction(() => document.getElementById("state").textContent === "token expired", null, { timeout: 5000 });
      const text = await infoOf(page);
      assert.match(text, /token expired/);
      assert.doesNotMatch(text, /check the channel names/);
      // The page stopped: no reconnection with the expired token.
      await new Promise((r) => setTimeout(r, 2500)); // more than the retry: 2000 of the stream
      assert.equal(await page.textContent("#state"), "token expired");
    } finally {
      await context.close();
    }
    assert.deepEqual(consoleErrors.filter((e) => e.test === "token_expired"), [], "no console errors");
  });

  test("shows herald.shutdown and says the server is restarting", { timeout: 15_000 }, async () => {
    const stream = "stream:demo-shutdown";
    const { context, page } = await newTestPage("shutdown");
    try {
      await page.goto(`${h.url}/demo?channels=${stream}&token=${s.token({ sub: accountId(404) })}`, { timeout: 5000 });
      await waitConnected(page);
      const stopped = h.stop();
      h = null;
      await stopped;
      const rows = await waitRows(page, (rs) => rs.some((r) => r.event === "herald.shutdown"), "a herald.shutdown row");
      const ended = rows.find((r) => r.event === "herald.shutdown");
      assert.deepEqual(dataOf(ended), { reason: "shutdown", retry_ms: 700 });
      assert.equal(ended.cls, "ending");
      const text = await infoOf(page);
      assert.match(text, /shutting down \(herald\.shutdown\); reconnecting in 700 ms/);
      assert.doesNotMatch(text, /check the channel names/);
    } finally {
      await context.close();
    }
  });
});

// demo/publisher.mjs against a herald that wants the publish API key.
describe("demo publisher", { timeout: 30_000 }, () => {
  const s = hsSetup();
  let h = null;
  before(async () => {
    h = await startHerald(s.args, { insecure: false });
  });
  after(async () => {
    await h?.stop();
  });

  /** Runs the publisher for one event; resolves {code, stdout, stderr} (killed after 8 s). */
  function runPublisher(apiKey) {
    const env = { ...process.env };
    delete env.HERALD_API_KEY;
    if (apiKey !== undefined) env.HERALD_API_KEY = apiKey;
    const child = spawn(process.execPath, [PUBLISHER, "--url", h.url, "--count", "1"], { env });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 8000);
    return new Promise((resolve) =>
      child.on("exit", (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal, stdout, stderr });
      }),
    );
  }

  test("without HERALD_API_KEY: stops at the 401 with a clear message, exit 1", { timeout: 10_000 }, async () => {
    const r = await runPublisher(undefined);
    assert.equal(r.signal, null, `killed: it kept retrying\n${r.stderr}`);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /HTTP 401 from .*\/v1\/publish/);
    assert.match(r.stderr, /set HERALD_API_KEY to the key herald was started with/);
    assert.doesNotMatch(r.stderr, /retrying/);
  });

  test("with a wrong HERALD_API_KEY: says the key is wrong, exit 1", { timeout: 10_000 }, async () => {
    const r = await runPublisher("0123456789abcdef0123456789abcdef");
    assert.equal(r.signal, null, `killed: it kept retrying\n${r.stderr}`);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /HERALD_API_KEY given is not the server's publish API key/);
  });

  test("with the right key: publishes and exits 0", { timeout: 10_000 }, async () => {
    const r = await runPublisher(s.apiKey);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /published 1 event\b/);
  });
});
