// Versioned publishing (docs/protocol.md "Versioned publishing") on one
// in-process instance: 2,000 states replayed after the idempotency window are
// all suppressed (200, `suppressed`, offsets unchanged, nothing stored or
// delivered: a WebSocket subscriber and the channel's position say so);
// Centrifugo's /api/publish and /api/broadcast say `suppressed` too; bad
// `version` and `version_epoch` values get 400 with the field named.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { apiRaw } from "./lib/centrifuge.mjs";
import { awaitBackgroundStops, publish, suiteHerald } from "./lib/herald.mjs";
import { replayIsSuppressed } from "./lib/versions.mjs";
import { publicationsOf, wsConnect, wsSubscribe } from "./lib/ws.mjs";

after(awaitBackgroundStops);

describe("versioned publishing, in-process", () => {
  const h = suiteHerald(["--idempotency-window=1", "--history-size=3000"]);

  test("2,000 publications replayed after the idempotency window: nothing stored or delivered, offsets unchanged", async () => {
    const channel = "stream:versions";
    const ws = await wsConnect(h.url);
    try {
      await wsSubscribe(ws, channel);
      await replayIsSuppressed({
        publishUrls: [h.url],
        channel,
        n: 2000,
        windowMs: 1000,
        delivered: () => publicationsOf(ws, channel).length,
      });
      const offsets = publicationsOf(ws, channel).map((p) => p.offset);
      assert.deepEqual(offsets, Array.from({ length: 2001 }, (_, i) => i + 1));
    } finally {
      await ws.close();
    }
  });

  test("Centrifugo's /api/publish and /api/broadcast answer suppressed with the reason", async () => {
    const call = async (method, body) => {
      const r = await apiRaw(h.url, method, body);
      return { status: r.status, body: r.json };
    };
    const ok = await call("publish", { channel: "stream:vapi", data: { a: 1 }, version: 7, version_epoch: "run-1" });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.result.suppressed, undefined);
    const stale = await call("publish", { channel: "stream:vapi", data: { a: 0 }, version: "7", version_epoch: "run-1" });
    assert.deepEqual(stale.body.result, { offset: 1, epoch: ok.body.result.epoch, suppressed: true, suppress_reason: "stale_version" });
    const other = await call("publish", { channel: "stream:vapi", data: { a: 2 }, version: 1, version_epoch: "run-2" });
    assert.equal(other.body.result.offset, 2, "another version epoch counts anew");
    const b = await call("broadcast", { channels: ["stream:vapi", "stream:vapi2"], data: { a: 3 }, version: 1, version_epoch: "run-2" });
    assert.equal(b.body.result.responses[0].result.suppressed, true);
    assert.equal(b.body.result.responses[1].result.suppressed, undefined);
    assert.equal(b.body.result.responses[1].result.offset, 1);
  });

  test("bad version values are 400 with the field named", async () => {
    for (const extra of [{ version: "abc" }, { version: -1 }, { version: 0 }, { version: 1.5 }, { version: "18446744073709551616" }, { version_epoch: "x" }, { version: 1, version_epoch: "" }]) {
      const r = await publish(h.url, { channel: "stream:vbad", event: "e", data: 1, ...extra });
      assert.equal(r.status, 400, JSON.stringify(extra));
      assert.equal(r.json.error.code, "invalid_request");
      assert.match(r.json.error.message, /version/);
    }
  });
});
