// Shared by the status page (app/status.html) and the demo viewer
// (demo/viewer.html), inlined into both at build time (app/CMakeLists.txt).
const $ = (id) => document.getElementById(id);

// "a, b,,c" -> ["a", "b", "c"] (null or "" -> []).
const splitList = (text) => (text || "").split(",").map((s) => s.trim()).filter(Boolean);

// EventSource delivers a named SSE event ("event: withdrawn") only to
// listeners for that exact name; there is no wildcard. Both pages listen for
// the unnamed "message" type, the demo publisher's names and herald.gap.
const DEMO_EVENTS = ["message", "created", "withdrawn", "topped_up", "paused", "resumed",
                     "cancelled", "herald.gap"];

// The state badge: cls is "" (idle), "connecting", "open" or "closed".
function setBadge(el, cls, text) {
  el.className = cls ? "badge " + cls : "badge";
  el.textContent = text;
}

// GET /v1/sse for these channels. EventSource cannot set headers: the token
// travels as ?token= (docs/auth.md).
function sseUrl(channels, token) {
  let url = "/v1/sse?" + channels.map((c) => "channel=" + encodeURIComponent(c)).join("&");
  if (token) url += "&token=" + encodeURIComponent(token);
  return url;
}

// Opens an EventSource on url and tells on.open(), on.reconnecting(),
// on.closed() and on.event(name, e) for each of names. EventSource reconnects
// by itself (resending Last-Event-ID) unless the server refused the request
// (e.g. 400 for a bad channel): then readyState is CLOSED and it gives up.
function watchSse(url, names, on) {
  const es = new EventSource(url);
  es.onopen = () => on.open();
  es.onerror = () => (es.readyState === EventSource.CLOSED ? on.closed() : on.reconnecting());
  for (const name of names) es.addEventListener(name, (e) => on.event(name, e));
  return es;
}

// A table row of [class, content] cells; a string content is put in as text,
// never HTML (the data is whatever a publisher sent).
function tableRow(cells) {
  const tr = document.createElement("tr");
  for (const [cls, content] of cells) {
    const td = document.createElement("td");
    td.className = cls;
    td.append(content);
    tr.append(td);
  }
  return tr;
}

// Puts tr first in tbody and keeps at most max rows (the newest).
function prependRow(tbody, tr, max) {
  tbody.prepend(tr);
  while (tbody.rows.length > max) tbody.deleteRow(-1);
}
