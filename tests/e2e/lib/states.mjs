// Traffic of "state" publications for the conflation and slow-link suites
// (conflate.test.mjs, slow_link.test.mjs): about 1 KiB each, incompressible
// (the SDK's `ws` offers permessage-deflate: a repeated pad would shrink to
// nothing and the link would not be slow for it), each naming its channel and
// its number n (from 1 per channel) in its data.

import crypto from "node:crypto";

import { publishOk, sleep } from "./herald.mjs";

const pad = () => crypto.randomBytes(750).toString("base64");

/**
 * Publishes `rate` publications per second to each of `channels` on `url` for
 * `ms`, or until `stop()` is true: `{channel, n, pad}` with event "state".
 * @returns {Promise<Record<string, number>>} the last n published per channel
 */
export async function publishStates(url, channels, { ms, rate, stop = () => false }) {
  const last = Object.fromEntries(channels.map((c) => [c, 0]));
  const start = Date.now();
  let n = 0;
  while (Date.now() - start < ms && !stop()) {
    n += 1;
    const due = start + (n * 1000) / rate;
    const k = n;
    await Promise.all(
      channels.map(async (channel) => {
        await publishOk(url, { channel, event: "state", data: { channel, n: k, pad: pad() } });
        last[channel] = k;
      }),
    );
    await sleep(Math.max(0, due - Date.now()));
  }
  return last;
}
