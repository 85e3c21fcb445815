// Headless Chromium for the suites that drive a page (status_page,
// demo_page, ws_deflate): the system Chromium (/usr/bin/chromium, or
// $HERALD_CHROMIUM) through playwright-core, which never downloads a browser.

import { after, before } from "node:test";

import { chromium } from "playwright-core";

import { startHerald } from "./herald.mjs";

/** The Chromium binary: $HERALD_CHROMIUM or /usr/bin/chromium. */
export const CHROMIUM = process.env.HERALD_CHROMIUM || "/usr/bin/chromium";

// The machine's closed network refuses Chromium's background connections:
// keep it to loopback. --no-sandbox because the tests may run as root.
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Launches headless Chromium (CHROMIUM, CHROMIUM_ARGS), waiting `timeoutMs` at most; resolves to the playwright Browser. */
export function launchChromium(timeoutMs = 9000) {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: timeoutMs });
}

/**
 * The herald and the browser of a page suite: a file-level `before` hook
 * (15 s at most) starts herald (startHerald(args, opts)) and launches
 * Chromium; an `after` hook (10 s at most) runs `beforeClose()` (close what
 * the tests still hold), closes the browser and always stops herald (its
 * stop(): the exit and the sanitizer check).
 * @param {string[]} args herald flags
 * @param {object} opts startHerald options
 * @param {{beforeClose?: () => Promise<void>}} hooks
 * @returns {{herald: object, browser: import("playwright-core").Browser | null}} filled by the
 *   `before` hook: `herald` with the startHerald() handle's fields (url, port, ...)
 */
export function browserSuite(args = [], opts = {}, { beforeClose = async () => {} } = {}) {
  const fx = { herald: {}, browser: null };
  let started = null;
  before(
    async () => {
      started = await startHerald(args, opts);
      Object.assign(fx.herald, started);
      fx.browser = await launchChromium();
    },
    { timeout: 15_000 },
  );
  after(
    async () => {
      try {
        await beforeClose();
        await fx.browser?.close();
      } finally {
        await started?.stop();
      }
    },
    { timeout: 10_000 },
  );
  return fx;
}

/**
 * A new page in a context of its own, whose console errors and uncaught
 * exceptions go to `onError({text, url})` (`url` where a console error came
 * from, "" for an exception, whose `text` starts with "pageerror: ").
 * @param {import("playwright-core").Browser} browser
 * @param {{viewport: {width:number, height:number}, timeoutMs: number, onError: (e: {text:string, url:string}) => void}} how
 *   `viewport` in CSS pixels; `timeoutMs` the page's default timeout (ms)
 * @returns {Promise<{context: object, page: object}>} close `context` when done
 */
export async function newPage(browser, { viewport, timeoutMs, onError }) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.setDefaultTimeout(timeoutMs);
  page.on("console", (msg) => {
    if (msg.type() === "error") onError({ text: msg.text(), url: msg.location()?.url ?? "" });
  });
  page.on("pageerror", (err) => onError({ text: `pageerror: ${err.stack || err}`, url: "" }));
  return { context, page };
}
