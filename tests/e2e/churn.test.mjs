// Many channels coming and going must not stall the server. Found by a
// newcomer's trial: the channel registry was linked to every channel, and
// removing a link scans the registry's list of links, so stopping tens of
// thousands of idle channels at once froze publishing for minutes. The same
// burst (20,480 distinct channels, all idle together after --history-ttl)
// must leave the server answering a new publish at once.

import assert from "node:assert/strict";
import { after, test } from "node:test";

import { awaitBackgroundStops, publish, sleep, withHerald } from "./lib/herald.mjs";

after(() => awaitBackgroundStops());

test("twenty thousand channels expiring together do not stall publishing", { timeout: 90_000 }, async () => {
  await withHerald(["--history-ttl=2", "--max-channels-per-publish=64"], async (h) => {
    const batches = 320;
    for (let b = 0; b < batches; b += 8) {
      await Promise.all(
        Array.from({ length: 8 }, (_, k) => {
          const channels = Array.from({ length: 64 }, (_, i) => `stream:churn-${b + k}-${i}`);
          return publish(h.url, { channels, event: "burst", data: { b: b + k } }).then((r) =>
            assert.equal(r.status, 200, r.text),
          );
        }),
      );
    }
    // Let every channel's history expire, and the registry stop them all.
    await sleep(3500);
    for (let i = 0; i < 5; i++) {
      const t0 = Date.now();
      const r = await publish(h.url, { channel: `stream:after-${i}`, event: "e", data: i });
      const ms = Date.now() - t0;
      assert.equal(r.status, 200, r.text);
      assert.ok(ms < 2000, `publish ${i} after the mass expiry took ${ms} ms`);
      await sleep(200);
    }
  });
});
