// GET /metrics in cluster mode, against a real redis-server (docs/metrics.md):
// herald_redis_up follows Redis going away and coming back,
// herald_redis_reconnects_total counts the outage, Redis command latency is
// observed per command, publications are counted once from the HTTP
// publisher and once as they come back from Redis, and the exposition passes
// `promtool check metrics` throughout. The Grafana dashboard
// (docker/grafana/dashboards/herald.json) is checked against the same live
// exposition: every query parses (`promtool check rules`) and every metric it
// names is exposed; docker/compose.yml mounts it.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";

import { getJson, publishOk } from "../lib/herald.mjs";
import { cleanupStack } from "../lib/processes.mjs";
import { promtoolCheck, scrape, scrapeUntil as scrapeMetricsUntil, settledScrape } from "../lib/metrics.mjs";
import { REPO, sseItems, sseSubscribe, startRedis, startRedisAndHerald, tempDir, waitUntil } from "./lib.mjs";
import { PROMTOOL } from "../lib/metrics.mjs";

const DASHBOARD = path.join(REPO, "docker", "grafana", "dashboards", "herald.json");

/** Every PromQL expression of a Grafana dashboard (panels, nested rows too). */
function dashboardQueries(dashboard) {
  const out = [];
  const walk = (panels = []) => {
    for (const p of panels) {
      for (const t of p.targets || []) out.push({ panel: p.title, expr: t.expr });
      walk(p.panels);
    }
  };
  walk(dashboard.panels);
  return out;
}

const stops = cleanupStack(); // run after the file, last first

/** Polls `${url}/metrics` until `pred(scrape)` holds (10 s at most); returns that scrape. */
const scrapeUntil = (url, pred, what, timeoutMs = 10_000) => scrapeMetricsUntil(url, pred, what, timeoutMs);

describe("cluster metrics", { timeout: 90_000 }, () => {
  test("Redis state, reconnects, command latency and publications from Redis", async () => {
    const { redis, h } = await startRedisAndHerald(stops);

    const m0 = await scrapeUntil(h.url, (m) => m.get("herald_redis_up") === 1, "herald_redis_up 1");
    let check = await promtoolCheck(m0.text);
    assert.equal(check.code, 0, `${check.output}\n${m0.text}`);
    assert.equal(m0.get("herald_redis_reconnects_total"), 0);
    assert.match(m0.text, /^# TYPE herald_redis_command_duration_seconds histogram$/m);
    assert.equal((await getJson(h.url, "/v1/status")).json.redis, "up");
    assert.equal((await getJson(h.url, "/v1/status")).json.mode, "cluster");

    const channel = "stream:cluster-metrics";
    const sub = await sseSubscribe(h.url, [channel]);
    stops.push(() => sub.close());
    // The probes' writes may be counted a moment after curl read them.
    const m1 = await settledScrape(h.url);
    const d = (m, name, labels) => m.get(name, labels) - m1.get(name, labels);
    const N = 5;
    for (let i = 0; i < N; i++) await publishOk(h.url, { channel, event: "e", data: { i } });
    await waitUntil(() => sseItems(sub.events.items, channel, sub.channels).length === N, {
      what: `${N} publications through Redis`,
    });
    const m2 = await scrapeUntil(
      h.url,
      // Each figure read below is its own update: wait until all have it.
      (m) =>
        d(m, "herald_frames_written_total", { transport: "sse" }) === N &&
        d(m, "herald_publications_received_total", { source: "http" }) >= N &&
        d(m, "herald_publications_received_total", { source: "redis" }) >= N &&
        d(m, "herald_deliveries_total", { transport: "sse" }) >= N &&
        d(m, "herald_redis_command_duration_seconds_count") >= N &&
        d(m, "herald_publish_to_write_seconds_count") >= N,
      "every frame written, publication received, delivery and observation counted",
    );
    assert.equal(d(m2, "herald_publications_received_total", { source: "http" }), N);
    assert.equal(d(m2, "herald_publications_received_total", { source: "redis" }), N);
    assert.equal(d(m2, "herald_deliveries_total", { transport: "sse" }), N);
    // At least one publish script per publication, each observed.
    assert.ok(d(m2, "herald_redis_command_duration_seconds_count") >= N);
    assert.ok(d(m2, "herald_redis_command_duration_seconds_sum") > 0);
    assert.equal(d(m2, "herald_publish_to_write_seconds_count"), N);

    // Redis goes away: the gauge drops to 0 ...
    await redis.kill("SIGKILL");
    // The gauge and the counter are two updates, not one: wait for both
    // (a fresh-clone run scraped between them: up 0, reconnects still 0).
    const down = await scrapeUntil(
      h.url,
      (m) => m.get("herald_redis_up") === 0 && m.get("herald_redis_reconnects_total") >= 1,
      "herald_redis_up 0 and one outage counted",
    );
    assert.equal(down.get("herald_redis_reconnects_total"), 1);
    assert.equal((await getJson(h.url, "/v1/status")).json.redis, "down");
    check = await promtoolCheck(down.text);
    assert.equal(check.code, 0, check.output);

    // ... and back to 1 once it is back (same port); one outage counted.
    const again = await startRedis({ port: redis.port });
    stops.push(() => again.stop());
    const up = await scrapeUntil(h.url, (m) => m.get("herald_redis_up") === 1, "herald_redis_up 1 again", 20_000);
    assert.equal(up.get("herald_redis_reconnects_total"), 1);
    assert.equal((await getJson(h.url, "/v1/status")).json.redis_reconnects, 1);
  });

  test("the Grafana dashboard queries only metrics a live herald exposes, and compose mounts it", async () => {
    const { redis, h } = await startRedisAndHerald(stops);
    // One delivery, so the histograms have observations (names exist either way).
    const sub = await sseSubscribe(h.url, ["stream:dashboard"]);
    stops.push(() => sub.close());
    const m = await scrapeUntil(h.url, (x) => x.get("herald_redis_up") === 1, "herald_redis_up 1");
    const exposed = new Set([...m.series.keys()].map((k) => k.replace(/\{.*$/, "")));

    const dashboard = JSON.parse(readFileSync(DASHBOARD, "utf8"));
    assert.equal(dashboard.uid, "herald");
    const queries = dashboardQueries(dashboard);
    assert.ok(queries.length >= 15, `${queries.length} queries`);
    const names = new Set();
    for (const { panel, expr } of queries) {
      assert.ok(expr, `panel ${panel} has a query`);
      // Metric names: identifiers that are not PromQL functions, keywords or label names.
      for (const name of expr.match(/\b(?:herald|process)_[a-z_]+\b/g) || []) {
        names.add(name);
        assert.ok(exposed.has(name), `panel "${panel}": ${name} is not in /metrics (${expr})`);
      }
      assert.ok(/\b(?:herald|process)_/.test(expr), `panel "${panel}" queries a Herald metric: ${expr}`);
    }
    assert.ok(names.size >= 15, [...names].join(" "));

    // Every expression is valid PromQL: promtool checks them as recording rules.
    const dir = tempDir("herald-dashboard-");
    const rules = path.join(dir, "rules.yml");
    writeFileSync(rules, "groups:\n  - name: dashboard\n    rules:\n" +
      queries.map((q, i) => `      - record: dashboard:query_${i}\n        expr: ${JSON.stringify(q.expr)}\n`).join(""));
    const check = spawnSync(PROMTOOL, ["check", "rules", rules], { encoding: "utf8", timeout: 10_000 });
    assert.equal(check.status, 0, `${check.stdout}${check.stderr}`);

    // docker/compose.yml mounts the dashboard and its provisioning.
    const compose = readFileSync(path.join(REPO, "docker", "compose.yml"), "utf8");
    for (const mount of ["./grafana/dashboards:/var/lib/grafana/dashboards", "./grafana/provisioning:/etc/grafana/provisioning",
                         "./prometheus.yml:/etc/prometheus/prometheus.yml"]) {
      assert.ok(compose.includes(mount), mount);
      assert.ok(existsSync(path.join(REPO, "docker", mount.split(":")[0])), mount);
    }
    const provider = readFileSync(path.join(REPO, "docker", "grafana", "provisioning", "dashboards", "herald.yml"), "utf8");
    assert.match(provider, /path: \/var\/lib\/grafana\/dashboards/);
    const datasource = readFileSync(path.join(REPO, "docker", "grafana", "provisioning", "datasources", "prometheus.yml"), "utf8");
    assert.match(datasource, new RegExp(`uid: ${dashboard.panels[0].datasource.uid}\\b`));
  });
});
