// Helpers for tests of GET /metrics: scrape and parse the Prometheus text
// exposition (format 0.0.4), and check it with `promtool check metrics`
// (Debian package `prometheus`; $PROMTOOL overrides the path).

import { spawn } from "node:child_process";

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

/** Runs `promtool check metrics` on `text`; resolves {code, output}. */
export function promtoolCheck(text) {
  return new Promise((resolve, reject) => {
    const child = spawn(PROMTOOL, ["check", "metrics"], { stdio: ["pipe", "pipe", "pipe"] });
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
