// Helpers for tests of GET /metrics: scrape and parse the Prometheus text
// exposition (format 0.0.4), and check it with `promtool check metrics`
// (Debian package `prometheus`; $PROMTOOL overrides the path).

import { pollUntil } from "./herald.mjs";
import { spawnProcess } from "./processes.mjs";

export const PROMTOOL = process.env.PROMTOOL || "promtool";

/**
 * Parses an exposition into a Map from series (`name{k="v",...}` exactly as
 * written, or `name`) to its numeric value. Comment lines are skipped.
 */
export function parseExposition(text) {
  const series = new Map();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${JSON.stringify(line)}`);
    series.set(m[1], m[2] === "+Inf" ? Infinity : Number(m[2]));
  }
  return series;
}

/**
 * GET `${url}/metrics`. Returns {status, contentType, text, series, get}
 * where `get(name, labels)` is the value of one series (labels an object,
 * in the order the server writes them) and throws when it is missing.
 */
export async function scrape(url) {
  const res = await fetch(`${url}/metrics`);
  const text = await res.text();
  const series = parseExposition(text);
  const get = (name, labels = {}) => {
    const l = Object.entries(labels)
      .map(([k, v]) => `${k}="${v}"`)
      .join(",");
    const key = l ? `${name}{${l}}` : name;
    if (!series.has(key)) throw new Error(`no series ${key} in:\n${text}`);
    return series.get(key);
  };
  return { status: res.status, contentType: res.headers.get("content-type"), text, series, get };
}

/**
 * A scrape to take differences from: herald counts a write just after the
 * kernel took it, so a client may read bytes a moment before /metrics counts
 * them (another I/O thread can answer the scrape first). Scrapes until no
 * outbound buffer is queued and two scrapes `gapMs` apart count the same
 * frames and bytes written (nothing may be publishing meanwhile); resolves
 * the later one, or rejects after `timeoutMs`.
 */
export async function settledScrape(url, { gapMs = 100, timeoutMs = 5000 } = {}) {
  const written = (m) =>
    ["sse", "ws"]
      .map((t) => `${m.get("herald_frames_written_total", { transport: t })}/${m.get("herald_bytes_written_total", { transport: t })}`)
      .join(" ");
  const deadline = Date.now() + timeoutMs;
  let before = await scrape(url);
  for (;;) {
    await new Promise((r) => setTimeout(r, gapMs));
    const now = await scrape(url);
    if (now.get("herald_outbound_buffer_bytes") === 0 && written(now) === written(before)) return now;
    if (Date.now() > deadline) throw new Error(`writes still being counted after ${timeoutMs} ms:\n${now.text}`);
    before = now;
  }
}

/** Runs `promtool check metrics` on `text`; resolves {code, output}. */
export function promtoolCheck(text) {
  return new Promise((resolve, reject) => {
    const child = spawnProcess(PROMTOOL, ["check", "metrics"], { stdio: ["pipe", "pipe", "pipe"] }, "promtool");
    let output = "";
    child.stdout.on("data", (c) => (output += c));
    child.stderr.on("data", (c) => (output += c));
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
    child.stdin.end(text);
  });
}

/**
 * Scrapes `${url}/metrics` (scrape()) every 50 ms until `pred(scrape)`
 * holds; returns that scrape.
 * @param {string} url herald's base URL
 * @param {(m: Awaited<ReturnType<typeof scrape>>) => boolean} pred
 * @param {string} what what is awaited, for the error
 * @param {number} timeoutMs
 * @throws after `timeoutMs`, naming `what`, with the last scrape's text
 */
export function scrapeUntil(url, pred, what, timeoutMs = 5000) {
  return pollUntil(() => scrape(url), pred, { what, timeoutMs, show: (last) => `last scrape:\n${last?.text}` });
}

/** The value of counter `name` (with `labels`) in herald's /metrics at `url`; 0 when absent. */
export async function counterValue(url, name, labels) {
  const m = await scrape(url);
  try {
    return m.get(name, labels);
  } catch {
    return 0;
  }
}
