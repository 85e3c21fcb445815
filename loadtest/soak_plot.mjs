#!/usr/bin/env node
// The soak run's plot (loadtest/soak.mjs): two panels over the run's time in
// minutes, RSS (MiB) above, file descriptors, connections and channel
// actors below, each with its own labelled axis. Also a command that redraws
// a plot from a soak CSV:
//
//   node loadtest/soak_plot.mjs soak.csv > soak.svg
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const esc = (s) => String(s).replace(/[<>&"]/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;" })[c]);

/** A "nice" axis top: 1, 2 or 5 times a power of ten, at least `v`. */
function niceTop(v) {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

/**
 * Renders the samples ({t (s), rssKiB, fds, connections, channels}) as SVG.
 * `title` heads the picture.
 */
export function soakSvg(samples, title = "soak") {
  const W = 900, H = 560, L = 70, R = 30, T = 40, gap = 50, B = 45;
  const ph = (H - T - B - gap) / 2, pw = W - L - R;
  const maxT = Math.max(1, ...samples.map((s) => s.t)) / 60;
  const tTop = Math.ceil(maxT / 5) * 5 || 1;
  const x = (tMin) => L + (pw * tMin) / tTop;
  let o = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`;
  o += `<rect width="100%" height="100%" fill="white"/>`;
  o += `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15">${esc(title)}</text>`;
  const panel = (top, label, series) => {
    const max = niceTop(Math.max(1, ...series.flatMap(({ key, scale }) => samples.map((s) => s[key] * scale))) * 1.05);
    const y = (v) => top + ph * (1 - Math.min(v, max) / max);
    for (let i = 0; i <= 4; i++) {
      const v = (max * i) / 4;
      o += `<line x1="${L}" x2="${L + pw}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#ddd"/>`;
      o += `<text x="${L - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${Number(v.toFixed(1))}</text>`;
    }
    for (let t = 0; t <= tTop; t += 5)
      o += `<line x1="${x(t).toFixed(1)}" x2="${x(t).toFixed(1)}" y1="${top}" y2="${top + ph}" stroke="#eee"/>`;
    o += `<rect x="${L}" y="${top}" width="${pw}" height="${ph}" fill="none" stroke="#444"/>`;
    o += `<text transform="translate(16 ${top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(label)}</text>`;
    let ly = top + 16;
    for (const { key, scale, color, name } of series) {
      const pts = samples.map((s) => `${x(s.t / 60).toFixed(1)},${y(s[key] * scale).toFixed(1)}`).join(" ");
      o += `<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts}"/>`;
      o += `<rect x="${L + 10}" y="${ly - 9}" width="14" height="3" fill="${color}"/><text x="${L + 30}" y="${ly - 4}">${esc(name)}</text>`;
      ly += 16;
    }
  };
  panel(T, "RSS (MiB)", [{ key: "rssKiB", scale: 1 / 1024, color: "#1f77b4", name: "server RSS, MiB" }]);
  const top2 = T + ph + gap;
  panel(top2, "count", [
    { key: "fds", scale: 1, color: "#ff7f0e", name: "open file descriptors" },
    { key: "connections", scale: 1, color: "#2ca02c", name: "client connections" },
    { key: "channels", scale: 1, color: "#9467bd", name: "channel actors" },
  ]);
  for (let t = 0; t <= tTop; t += 5)
    o += `<text x="${x(t).toFixed(1)}" y="${top2 + ph + 18}" text-anchor="middle">${t}</text>`;
  o += `<text x="${L + pw / 2}" y="${H - 8}" text-anchor="middle">minutes since the server started</text>`;
  return o + "</svg>\n";
}

/** Parses the CSV soak.mjs writes (t_s,rss_kib,fds,connections,channels). */
export function parseSoakCsv(text) {
  return text
    .trim()
    .split("\n")
    .slice(1)
    .map((l) => {
      const [t, rssKiB, fds, connections, channels] = l.split(",").map(Number);
      return { t, rssKiB, fds, connections, channels };
    });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const csv = process.argv[2];
  if (!csv) {
    console.error("usage: node loadtest/soak_plot.mjs SOAK.csv > SOAK.svg");
    process.exit(2);
  }
  process.stdout.write(soakSvg(parseSoakCsv(readFileSync(csv, "utf8")), process.argv[3] ?? `soak (${csv})`));
}
