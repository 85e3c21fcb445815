// The version guard's scenario (docs/protocol.md "Versioned publishing"),
// shared by the in-process suite (version.test.mjs) and the cluster one
// (cluster/channel_classes.test.mjs): an indexer publishes `n` states with
// increasing versions and idempotency keys, then, after the idempotency
// window, replays all of them (as after a crash): every replay is answered
// 200 with `suppressed`, at the channel's unchanged offset, and nothing is
// stored or delivered again.

import assert from "node:assert/strict";

import { getJson, publish, sleep } from "./herald.mjs";

/** Publishes version v = from..to-1 with key `${tag}-${v}` to `channel`, `parallel` at a time. */
export async function publishVersions(url, channel, from, to, { tag = "k", parallel = 1 } = {}) {
  const replies = [];
  let next = from;
  const worker = async () => {
    while (next < to) {
      const v = next++;
      const r = await publish(url, { channel, event: "state", data: { v }, version: v, idempotency_key: `${tag}-${v}` });
      assert.equal(r.status, 200, r.text);
      replies[v - from] = r.json;
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return replies;
}

/**
 * Runs the scenario on `channel`: `publishUrls` take turns (the replay goes
 * to each), `delivered()` counts what a subscriber received so far.
 * `windowMs`: the servers' --idempotency-window.
 */
export async function replayIsSuppressed({ publishUrls, channel, n, windowMs, delivered }) {
  const first = await publishVersions(publishUrls[0], channel, 1, n + 1, { tag: channel });
  assert.equal(first[n - 1].offsets[channel], n);
  assert.ok(first.every((r) => r.suppressed === undefined));
  await sleep(windowMs + 300); // the keys are forgotten: only the version can tell
  const head = async (url) => (await getJson(url, `/v1/channels/${encodeURIComponent(channel)}`)).json;
  const before = await head(publishUrls[0]);
  for (const url of publishUrls) {
    const replay = await publishVersions(url, channel, 1, n + 1, { tag: channel, parallel: 8 });
    for (const r of replay) {
      assert.equal(r.offsets[channel], n, JSON.stringify(r));
      assert.equal(r.suppressed?.[channel], "stale_version", JSON.stringify(r));
    }
  }
  await sleep(200);
  assert.equal(delivered(), n, "nothing delivered again");
  for (const url of publishUrls) assert.deepEqual(await head(url), before, "offsets unchanged");
  // A newer version is accepted and delivered.
  const newer = await publish(publishUrls[0], { channel, event: "state", data: { v: n + 1 }, version: n + 1 });
  assert.equal(newer.status, 200);
  assert.equal(newer.json.offsets[channel], n + 1);
  assert.equal(newer.json.suppressed, undefined);
}
