// The `eventsource` npm package (a WHATWG EventSource for Node) against a
// real herald: named events, the channel envelope (?envelope=1), resuming with
// Last-Event-ID (custom fetch), with ?last_event_id=, and the automatic
// reconnect after a server restart.

import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, test } from "node:test";

import { EventSource } from "eventsource";

import { encodeAccountId } from "../../demo/strkey.mjs";
import { eventSourceClient } from "./lib/eventsource.mjs";
import {
  awaitBackgroundStops,
  channelOfEvent,
  cursorPosition,
  Inbox,
  probeUntilDelivered,
  publishOk,
  publishOnce,
  sleep,
  startHerald,
  stopInBackground,
  suiteHerald,
  waitUntil,
} from "./lib/herald.mjs";

const USER = encodeAccountId(Uint8Array.from({ length: 32 }, (_, i) => 255 - i));
const TEST_TIMEOUT = 20_000;
const NAMES = ["probe", "created", "withdrawn", "missed", "live", "herald.gap"];

/**
 * Opens an EventSource on `channels` (lib/eventsource.mjs eventSourceClient),
 * listening for NAMES; `query` is appended to the URL.
 */
function openEventSource(baseUrl, channels, { lastEventId, query = "" } = {}) {
  const qs = channels.map((c) => `channel=${encodeURIComponent(c)}`).join("&");
  return eventSourceClient(`${baseUrl}/v1/sse?${qs}${query}`, NAMES, { lastEventId });
}

/** Waits until `client` receives a probe on every channel. */
async function ready(baseUrl, client, channels, send = publishOk) {
  await probeUntilDelivered(baseUrl, client.inbox, channels, {
    send,
    isProbe: (e, tag) => e.type === "probe" && e.data === JSON.stringify({ probe: tag }),
  });
  return client.inbox.items.length;
}

// Herald processes stopped in the background by the suites: wait for them.
after(() => awaitBackgroundStops());

describe("eventsource package", () => {
  const clients = [];
  const h = suiteHerald([], {
    beforeStop: async () => {
      for (const c of clients) c.close();
    },
  });

  test("receives named events with their ids", { timeout: TEST_TIMEOUT }, async () => {
    const channels = ["stream:es-named", `user:${USER}`];
    const client = openEventSource(h.url, channels);
    clients.push(client);
    const mark = await ready(h.url, client, channels);
    assert.equal(client.es.readyState, EventSource.OPEN);

    const r1 = await publishOk(h.url, { channel: channels[0], event: "created", data: { id: 1, note: "é\n" } });
    const r2 = await publishOk(h.url, { channel: channels[1], event: "withdrawn", data: { amount: "1.0000000" } });
    const [e1, e2] = await client.inbox.until((items) => items.length >= mark + 2 && items.slice(mark), {
      what: "2 events",
    });
    assert.equal(e1.type, "created");
    assert.deepEqual(JSON.parse(e1.data), { id: 1, note: "é\n" });
    assert.equal(cursorPosition(e1.lastEventId, channels[0]).offset, r1[channels[0]]);
    assert.equal(e2.type, "withdrawn");
    assert.deepEqual(JSON.parse(e2.data), { amount: "1.0000000" });
    assert.equal(cursorPosition(e2.lastEventId, channels[1]).offset, r2[channels[1]]);
    assert.equal(cursorPosition(e2.lastEventId, channels[0]).offset, r1[channels[0]], "the cursor keeps both channels");
    assert.equal(client.inbox.items.filter((e) => e.type === "message(unnamed)").length, 0);
    assert.equal(client.errors.length, 0, JSON.stringify(client.errors));
    client.close();
  });

  test("?envelope=1: one publication on two channels of the stream is told apart by channel", { timeout: TEST_TIMEOUT }, async () => {
    const channels = ["stream:es-envelope", `user:${USER}`];
    const client = openEventSource(h.url, channels, { query: "&envelope=1" });
    clients.push(client);
    const plain = openEventSource(h.url, channels);
    clients.push(plain);
    await probeUntilDelivered(h.url, client.inbox, channels, {
      isProbe: (e, tag) => e.type === "probe" && JSON.parse(e.data).data?.probe === tag,
    });
    const mark = await ready(h.url, plain, channels);
    const from = client.inbox.items.length;

    // As the demo publisher does: the same withdrawal to the stream and to the user.
    await publishOk(h.url, { channels, event: "withdrawn", data: { amount: "1.5000000" } });
    const got = await client.inbox.until((items) => items.length >= from + 2 && items.slice(from), {
      what: "the withdrawal on both channels",
    });
    const envelopes = got.map((e) => ({ type: e.type, ...JSON.parse(e.data) }));
    assert.deepEqual(
      envelopes.sort((a, b) => a.channel.localeCompare(b.channel)),
      [...channels].sort().map((channel) => ({ type: "withdrawn", channel, data: { amount: "1.5000000" } })),
    );
    // The id still carries the cursor of both channels.
    for (const c of channels) assert.ok(cursorPosition(got[1].lastEventId, c), `cursor names ${c}`);

    // Without ?envelope= the data is the publication's data alone, as before.
    const plainGot = await plain.inbox.until((items) => items.length >= mark + 2 && items.slice(mark), {
      what: "the plain withdrawal twice",
    });
    assert.deepEqual(plainGot.map((e) => JSON.parse(e.data)), [{ amount: "1.5000000" }, { amount: "1.5000000" }]);
    assert.equal(client.errors.length, 0, JSON.stringify(client.errors));
    client.close();
    plain.close();

    // Anything but 0 or 1 is refused before the stream starts.
    const bad = await fetch(`${h.url}/v1/sse?channel=stream:es-envelope&envelope=yes`);
    assert.equal(bad.status, 400);
    const body = await bad.json();
    assert.equal(body.error.code, "invalid_request");
    assert.match(body.error.message, /envelope/);
  });

  /** Subscribes, receives, closes; publishes 5 while away. Returns the last id and offset. */
  async function missFive(channel) {
    const first = openEventSource(h.url, [channel]);
    clients.push(first);
    await ready(h.url, first, [channel]);
    const lastId = first.inbox.items.at(-1).lastEventId;
    first.close();
    const last = cursorPosition(lastId, channel);
    for (let i = 0; i < 5; i++) {
      const r = await publishOk(h.url, { channel, event: "missed", data: { i } });
      assert.equal(r[channel], last.offset + 1 + i);
    }
    return { lastId, last };
  }

  async function checkResumed(client, channel, last) {
    await client.inbox.until((items) => items.length >= 5, { what: "5 replayed events" });
    for (let i = 0; i < 2; i++) await publishOk(h.url, { channel, event: "live", data: { i } });
    const all = await client.inbox.until((items) => items.length >= 7 && items, { what: "7 events" });
    await sleep(300);
    assert.equal(client.inbox.items.length, 7, `no extra events: ${JSON.stringify(client.inbox.items.slice(7))}`);
    assert.deepEqual(
      all.map((e) => [e.type, JSON.parse(e.data).i, cursorPosition(e.lastEventId, channel).offset]),
      [
        ...[0, 1, 2, 3, 4].map((i) => ["missed", i, last.offset + 1 + i]),
        ["live", 0, last.offset + 6],
        ["live", 1, last.offset + 7],
      ],
    );
  }

  test("new EventSource with Last-Event-ID (custom fetch) gets the missed 5, then live", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:es-resume-header";
    const { lastId, last } = await missFive(channel);
    const client = openEventSource(h.url, [channel], { lastEventId: lastId });
    clients.push(client);
    await checkResumed(client, channel, last);
    client.close();
  });

  test("new EventSource with ?last_event_id= gets the missed 5, then live", { timeout: TEST_TIMEOUT }, async () => {
    const channel = "stream:es-resume-query";
    const { lastId, last } = await missFive(channel);
    const client = openEventSource(h.url, [channel], { query: `&last_event_id=${encodeURIComponent(lastId)}` });
    clients.push(client);
    await checkResumed(client, channel, last);
    client.close();
  });
});

describe("eventsource package across a server restart", () => {
  test("reconnects by itself with Last-Event-ID and gets herald.gap epoch_changed, then live", { timeout: 30_000 }, async () => {
    const channel = "stream:es-restart";
    let h = await startHerald([]);
    const port = h.port;
    let client;
    try {
      // Publish on connections that close after the reply: an idle pooled
      // keep-alive connection would be reused by the EventSource's fetch
      // during the shutdown grace (see the keep-alive shutdown test in sse.test.mjs).
      const sendOnce = async (url, body) => {
        const r = await publishOnce(url, body);
        if (r.status !== 200) throw new Error(`publish: ${r.status} ${r.text}`);
        return r.json.offsets;
      };
      client = openEventSource(h.url, [channel]);
      await ready(h.url, client, [channel], sendOnce);
      const before = cursorPosition(client.inbox.items.at(-1).lastEventId, channel);
      const n = client.inbox.items.length;
      await h.stop(); // sends retry: 1000, then closes
      h = await startHerald([`--port=${port}`]).catch((err) => {
        throw new Error(`could not restart on port ${port}: ${err.message}`);
      });
      assert.equal(h.port, port);
      const [gap] = await client.inbox.until((items) => items.length > n && items.slice(n), {
        timeoutMs: 10_000,
        what: "the gap after the restart",
      });
      assert.equal(gap.type, "herald.gap");
      assert.deepEqual(JSON.parse(gap.data), { channel, reason: "epoch_changed" });
      assert.ok(client.errors.length >= 1, "the drop was reported through onerror");
      assert.equal(client.opens.length, 2, "opened twice");
      await probeUntilDelivered(h.url, client.inbox, [channel], {
        send: sendOnce,
        isProbe: (e, tag) => e.type === "probe" && e.data === JSON.stringify({ probe: tag }),
      });
      const after = cursorPosition(client.inbox.items.at(-1).lastEventId, channel);
      assert.notEqual(after.epoch, before.epoch, "a new epoch after the restart");
    } finally {
      client?.close();
      await h.stop();
    }
  });
});

/**
 * A TCP proxy on a loopback port to `targetPort` whose open connections the
 * test can cut (a proxy timeout, a network change). Records what came back.
 */
async function startCuttableProxy(targetPort) {
  const pairs = new Set();
  let downstream = "";
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, "127.0.0.1");
    const pair = { client, upstream };
    pairs.add(pair);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      pairs.delete(pair);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    upstream.on("data", (d) => (downstream += d.toString("latin1")));
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    downstream: () => downstream,
    cut: () => {
      for (const { client, upstream } of [...pairs]) {
        client.destroy();
        upstream.destroy();
      }
      pairs.clear();
    },
    close: () => new Promise((resolve) => {
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      server.close(resolve);
    }),
  };
}

describe("eventsource package: a cursor from the first byte", () => {
  let h;
  let proxy;
  before(async () => {
    h = await startHerald([]);
    proxy = await startCuttableProxy(h.port);
  });
  after(async () => {
    await proxy?.close();
    stopInBackground(h);
  });

  test("a subscriber cut off before the first publication resumes with Last-Event-ID and misses nothing", { timeout: TEST_TIMEOUT }, async () => {
    const channels = ["stream:es-first-byte", "stream:es-first-byte-2"];
    // Publishes on connections closed after the reply: this herald may have
    // the port of an earlier one, whose pooled keep-alive connections are dead.
    const send = async (body) => {
      const r = await publishOnce(h.url, body);
      if (r.status !== 200) throw new Error(`publish: ${r.status} ${r.text}`);
      return r.json.offsets;
    };
    await send({ channel: channels[1], event: "created", data: { before: true } });
    const sent = []; // Last-Event-ID of each request the EventSource made
    const qs = channels.map((c) => `channel=${encodeURIComponent(c)}`).join("&");
    const es = new EventSource(`${proxy.url}/v1/sse?${qs}`, {
      fetch: (input, init) => {
        sent.push(new Headers(init.headers).get("last-event-id"));
        return fetch(input, init);
      },
    });
    const inbox = new Inbox();
    for (const name of NAMES) es.addEventListener(name, (ev) => inbox.push({ type: ev.type, data: ev.data, lastEventId: ev.lastEventId }));
    const log = [];
    es.onerror = (ev) => log.push(`error ${ev.message} at ${Date.now()}`);
    es.onopen = () => log.push(`open at ${Date.now()}`);
    try {
      // The subscription is answered: the stream says where it starts.
      await waitUntil(() => /(^|\n)id: /.test(proxy.downstream()), { timeoutMs: 5000, what: "an id line" }).catch((err) => {
        throw new Error(`${err.message}; the stream so far: ${JSON.stringify(proxy.downstream())}`);
      });
      // herald.cursor reaches no listener: it only sets the cursor (the first
      // event a listener gets below is the missed publication, asserted there).
      assert.equal(inbox.items.length, 0, "herald.cursor reaches no listener here: it only sets the cursor");
      const cutAt = Date.now();
      proxy.cut(); // the client reconnects after `retry: 2000`
      const r = await send({ channels, event: "missed", data: { i: 1 } });
      const [e] = await inbox.until((items) => items.length >= 1 && items, { timeoutMs: 8000, what: `the missed publication (requests: ${JSON.stringify(sent)}, log ${JSON.stringify(log)}, cut at ${cutAt}, readyState ${es.readyState}, got ${JSON.stringify(proxy.downstream().slice(-300))})` });
      assert.equal(sent.length, 2, "one reconnect");
      assert.equal(sent[0], null);
      assert.ok(sent[1], "the reconnect sends Last-Event-ID");
      assert.equal(cursorPosition(sent[1], channels[0]).offset, 0, "the empty channel's cursor entry");
      assert.equal(cursorPosition(sent[1], channels[1]).offset, 1, "the other channel at its head");
      assert.equal(e.type, "missed", JSON.stringify(inbox.items));
      // The one publication names both channels: it arrives once per channel,
      // in either order (order is kept per channel only, docs/protocol.md).
      const both = await inbox.until((items) => items.length >= 2 && items.slice(0, 2), { what: "the second channel's publication" });
      assert.equal(both[1].type, "missed");
      const order = [channelOfEvent(sent[1], both[0].lastEventId, channels), channelOfEvent(both[0].lastEventId, both[1].lastEventId, channels)];
      assert.deepEqual([...order].sort(), [...channels].sort(), `once on each channel: ${JSON.stringify(both)}`);
      for (const c of channels) assert.equal(cursorPosition(both[1].lastEventId, c).offset, r[c], `${c} at the publication's offset`);
      await sleep(200);
      assert.equal(inbox.items.length, 2, "nothing twice");
    } finally {
      es.close();
    }
  });
});
