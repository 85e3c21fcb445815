// The status page (GET /, app/status.html) in a real headless Chromium driven
// by playwright-core: it shows this instance's figures from GET /v1/status
// (connections while the test holds some, channels, version, mode, Redis,
// publications per second from two samples), and its live viewer shows a
// publication made by the test on the channel typed in, with the optional
// token appended to the EventSource URL. Also: GET / answers JSON to
// clients that ask for it, and GET /v1/info always.
//
// The charts (deliveries/s, publications/s, connections, publish-to-write
// p50/p99, queued bytes) are drawn from /v1/status samples while the test
// publishes; a screenshot of them is written to $HERALD_E2E_ARTIFACTS (else
// the system temp directory) and its pixels are checked for the lines.
//
// Uses the system Chromium (/usr/bin/chromium, or $HERALD_CHROMIUM).

import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";

import { browserSuite, newPage } from "./lib/browser.mjs";
import { getJson, publishOk, sseReady } from "./lib/herald.mjs";

const ARTIFACTS = process.env.HERALD_E2E_ARTIFACTS || (await import("node:os")).tmpdir();

const RUN = `status-${process.pid}-${Date.now().toString(36)}`;

const held = [];
const fx = browserSuite([], {}, {
  beforeClose: async () => {
    for (const c of held) await c.close();
  },
});
const { herald } = fx;

/**
 * A new page (own context, `height` px high) whose console errors and
 * uncaught exceptions are collected in `errors`.
 * @returns {Promise<{context: object, page: object, errors: string[]}>}
 */
async function newTestPage(height) {
  const errors = [];
  const { context, page } = await newPage(fx.browser, {
    viewport: { width: 1200, height },
    timeoutMs: 8000,
    onError: ({ text }) => errors.push(text),
  });
  return { context, page, errors };
}

const number = (text) => Number(text.trim());

describe("status page", { timeout: 40_000 }, () => {
  test("GET / gives JSON clients the route index; GET /v1/info always", async () => {
    const json = await getJson(herald.url, "/", { headers: { accept: "application/json" } });
    assert.equal(json.status, 200);
    assert.match(json.headers.get("content-type"), /^application\/json/);
    assert.ok(json.json.routes.includes("GET /metrics"));
    const info = await getJson(herald.url, "/v1/info");
    assert.deepEqual(info.json, json.json);
    const page = await fetch(`${herald.url}/`, { headers: { accept: "text/html,*/*;q=0.8" } });
    assert.match(page.headers.get("content-type"), /^text\/html/);
    assert.match(await page.text(), /<title>Herald status<\/title>/);
  });

  test("shows the figures and a live publication of the channel typed in", { timeout: 30_000 }, async () => {
    // Two subscribers held by the test on two channels.
    held.push(await sseReady(herald.url, ["stream:status-a"]));
    held.push(await sseReady(herald.url, ["stream:status-b"]));
    const status = (await getJson(herald.url, "/v1/status")).json;

    const { context, page, errors } = await newTestPage(800);
    const sseUrls = [];
    page.on("request", (req) => req.url().includes("/v1/sse") && sseUrls.push(req.url()));
    try {
      await page.goto(`${herald.url}/`, { timeout: 5000 });
      await page.waitForFunction(() => document.getElementById("connections").textContent !== "–");
      assert.ok(number(await page.textContent("#connections")) >= 2, "the two held connections");
      assert.ok(number(await page.textContent("#connections-sse")) >= 2);
      assert.equal(number(await page.textContent("#connections-ws")), 0);
      assert.ok(number(await page.textContent("#channels")) >= 2);
      assert.equal(await page.textContent("#version"), status.version);
      assert.equal(await page.textContent("#mode"), "in-process");
      assert.equal(await page.textContent("#redis"), "not used");
      assert.match(await page.textContent("#uptime"), /\d+m \d+s/);

      // Publications per second from two samples: publish between samples
      // until a refresh shows a positive rate.
      let n = 0;
      const deadline = Date.now() + 10_000;
      for (;;) {
        for (let i = 0; i < 5; i++) await publishOk(herald.url, { channel: "stream:status-a", event: "tick", data: { n: n++ } });
        const rate = Number(await page.textContent("#publish-rate"));
        if (rate > 0) break;
        assert.ok(Date.now() < deadline, "a positive publications/s within 10 s");
        await page.waitForTimeout(300);
      }
      assert.ok(Number(await page.textContent("#delivery-rate")) >= 0);

      // The live viewer: channel and token typed in, a publication appears.
      await page.fill("#channel", "stream:status-live");
      await page.fill("#token", "t0k en");
      await page.click("#watch");
      await page.waitForFunction(() => document.getElementById("viewer-state").textContent.startsWith("watching"));
      assert.ok(
        sseUrls.some((u) => u.endsWith("/v1/sse?channel=stream%3Astatus-live&token=t0k%20en")),
        `EventSource URL with the token: ${sseUrls}`,
      );
      // The subscription is registered shortly after the stream opens.
      const tag = `${RUN}-<b>live</b>`;
      const deadline2 = Date.now() + 5000;
      let rows = [];
      while (!rows.some((r) => r.data.includes(tag))) {
        await publishOk(herald.url, { channel: "stream:status-live", event: "withdrawn", data: { tag } });
        await page.waitForTimeout(200);
        rows = await page.$$eval("#rows tr", (trs) =>
          trs.map((tr) => ({
            event: tr.querySelector("td.event").textContent,
            data: tr.querySelector("td.data").textContent,
          })),
        );
        assert.ok(Date.now() < deadline2, `the publication in the viewer: ${JSON.stringify(rows)}`);
      }
      const row = rows.find((r) => r.data.includes(tag));
      assert.equal(row.event, "withdrawn");
      assert.deepEqual(JSON.parse(row.data), { tag });
      assert.equal(await page.locator("#rows b").count(), 0, "data shown as text, never HTML");

      // The page's own EventSource is one more SSE connection on the next refresh.
      await page.waitForFunction(
        (before) => Number(document.getElementById("connections-sse").textContent) > before,
        2,
      );
      await page.click("#stop");
      assert.equal(await page.textContent("#viewer-state"), "idle");
    } finally {
      await context.close();
    }
    assert.deepEqual(errors, [], "no console errors");
  });

  test("charts the last minutes from /v1/status samples, with data (screenshot)", { timeout: 30_000 }, async () => {
    const subscriber = await sseReady(herald.url, ["stream:status-chart"]);
    held.push(subscriber);
    const { context, page, errors } = await newTestPage(900);
    // Every request the page makes stays on this server: no CDN, no external script.
    const foreign = [];
    page.on("request", (req) => !req.url().startsWith(herald.url) && !req.url().startsWith("data:") && foreign.push(req.url()));
    try {
      await page.goto(`${herald.url}/?refresh_ms=300`, { timeout: 5000 });
      const charts = ["deliveries", "publications", "connections", "latency", "queued"];
      const stats = () =>
        page.evaluate((names) => Object.fromEntries(names.map((n) => {
          const box = document.getElementById(`chart-${n}`);
          return [n, { points: Number(box.dataset.points || 0), max: Number(box.dataset.max || 0),
                       lines: box.querySelectorAll("svg polyline").length }];
        })), charts);
      // Publish (delivered to the held subscriber) until every chart with
      // traffic has several points and a positive value.
      let n = 0;
      let s;
      const deadline = Date.now() + 15_000;
      for (;;) {
        for (let i = 0; i < 5; i++) await publishOk(herald.url, { channel: "stream:status-chart", event: "tick", data: { n: n++ } });
        await page.waitForTimeout(100);
        s = await stats();
        const ready = ["deliveries", "publications", "connections", "latency"].every((c) => s[c].points >= 3 && s[c].max > 0);
        if (ready) break;
        assert.ok(Date.now() < deadline, `charts with data within 15 s: ${JSON.stringify(s)}`);
      }
      assert.equal(s.publications.lines, 1, "in-process mode: no Redis line");
      assert.equal(s.latency.lines, 2, "p50 and p99");
      assert.ok(s.queued.points >= 3, "queued bytes are charted too (0 when clients keep up)");
      const legend = await page.textContent("#chart-latency .legend");
      assert.match(legend, /p50 [\d.]+/);
      assert.match(legend, /p99 [\d.]+/);

      mkdirSync(ARTIFACTS, { recursive: true });
      const file = path.join(ARTIFACTS, "status-page-charts.png");
      await page.locator("#charts").screenshot({ path: file });
      // The screenshot shows the lines: count pixels of each series' colour
      // in the rendered image of that chart.
      for (const [chart, color] of [["deliveries", [0x5f, 0xb3, 0xf9]], ["publications", [0x4c, 0xc3, 0x8a]],
                                    ["connections", [0x5f, 0xb3, 0xf9]], ["latency", [0xef, 0x6b, 0x73]]]) {
        const png = await page.locator(`#chart-${chart} svg`).screenshot();
        const pixels = await page.evaluate(async ([b64, rgb]) => {
          const img = new Image();
          img.src = `data:image/png;base64,${b64}`;
          await img.decode();
          const canvas = document.createElement("canvas");
          canvas.width = img.width;
          canvas.height = img.height;
          const ctx = canvas.getContext("2d");
          ctx.drawImage(img, 0, 0);
          const d = ctx.getImageData(0, 0, img.width, img.height).data;
          let count = 0;
          for (let i = 0; i < d.length; i += 4)
            if (Math.abs(d[i] - rgb[0]) < 30 && Math.abs(d[i + 1] - rgb[1]) < 30 && Math.abs(d[i + 2] - rgb[2]) < 30) count++;
          return count;
        }, [png.toString("base64"), color]);
        assert.ok(pixels > 50, `${chart}: ${pixels} pixels of its line in the screenshot`);
      }
      console.log(`# status page charts: ${file}`);
    } finally {
      await context.close();
    }
    assert.deepEqual(foreign, [], "no request leaves the server");
    assert.deepEqual(errors, [], "no console errors");
  });
});
