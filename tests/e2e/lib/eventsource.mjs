// The `eventsource` npm package as the e2e suites use it: one client that
// records what it receives.

import { EventSource } from "eventsource";

import { Inbox } from "./herald.mjs";

/**
 * Opens an `eventsource` client on `url` (a /v1/sse URL with its query).
 * Every event named in `names`, and every unnamed one (type
 * "message(unnamed)"), goes to `inbox` as {type, data, lastEventId};
 * `errors` collects onerror reports ({at, message, code}), `opens` the times
 * it opened (reconnects included).
 * @param {string[]} names event names to listen for
 * @param {object} [options]
 * @param {string} [options.lastEventId] sent as the Last-Event-ID header of
 *        every request (through the package's custom fetch)
 * @returns {{es: EventSource, inbox: Inbox, errors: object[], opens: number[], close: Function}}
 */
export function eventSourceClient(url, names, { lastEventId } = {}) {
  const init = {};
  if (lastEventId !== undefined)
    init.fetch = (input, reqInit) =>
      fetch(input, { ...reqInit, headers: { ...reqInit.headers, "Last-Event-ID": lastEventId } });
  const es = new EventSource(url, init);
  const inbox = new Inbox();
  const errors = [];
  const opens = [];
  for (const name of names)
    es.addEventListener(name, (ev) => inbox.push({ type: ev.type, data: ev.data, lastEventId: ev.lastEventId }));
  es.onmessage = (ev) => inbox.push({ type: "message(unnamed)", data: ev.data, lastEventId: ev.lastEventId });
  es.onerror = (ev) => errors.push({ at: Date.now(), message: ev.message, code: ev.code });
  es.onopen = () => opens.push(Date.now());
  return { es, inbox, errors, opens, close: () => es.close() };
}
