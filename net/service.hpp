// service: what the network layer asks of the rest of the server.
//
// net/ parses and validates requests; the implementation (app/, backed by
// actors) publishes and creates connection actors. Methods are called on a
// session's I/O shard thread and must return at once.
#pragma once

#include "net/wire/errors.hpp"
#include "net/auth/policy.hpp"
#include "net/wire/http/publish_request.hpp"
#include "net/wire/publish_outcome.hpp"
#include "net/wire/publication.hpp"
#include "net/wire/sse/cursor.hpp"
#include "net/wire/stream_position.hpp"
#include "net/wire/tags_filter.hpp"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace herald::net {

namespace sse {
class sse_session;
}
namespace ws {
class ws_session;
}

/// The most distinct `event` parameters of one GET /v1/sse.
inline constexpr std::size_t max_sse_events = 32;

/// A validated SSE subscription request (GET /v1/sse).
struct sse_subscription {
  std::vector<std::string> channels;     ///< valid, distinct, request order
  std::vector<sse::cursor_entry> cursor; ///< from Last-Event-ID / last_event_id
  bool has_cursor = false;               ///< a cursor was sent (maybe empty of known channels)
  /// `?event=` names (valid, distinct, request order; at most
  /// max_sse_events): only publications with one of these events are
  /// written, on every channel (docs/protocol.md "SSE"); empty: all.
  std::vector<std::string> events;
  /// The filter of `events` (tags_filter::event_in; null when none), which
  /// the session applies and a cache class's answer honours.
  tags_filter_ptr filter{};
  /// `?envelope=1`: each publication's data is `{"channel":...,"data":...}`
  /// (docs/protocol.md "Subscribe over SSE"); `0` or absent: the data alone.
  bool envelope = false;
  auth::principal who;                   ///< the client, checked for every channel (docs/auth.md)
};

class service {
public:
  virtual ~service() = default;

  /// Completion of a publish: what it did (net/wire/publish_outcome.hpp),
  /// encoded by the route that answers. May be invoked from any thread,
  /// exactly once.
  using publish_done = std::function<void(publish_outcome)>;

  /// Publishes one event to one or more channels (request already
  /// validated): POST /v1/publish and Centrifugo's /api/publish and
  /// /api/broadcast alike.
  virtual void publish(http::publish_request req, publish_done done) = 0;

  /// Completion of a channel query: `ok` false when this instance cannot
  /// answer (cluster mode, a channel without local subscribers). Any thread.
  using history_done =
    std::function<void(bool ok, stream_position position, std::vector<publication_ptr> latest)>;

  /// A channel's current position and at most `limit` of its latest
  /// publications, oldest first (`channel` validated; `limit` 0: the
  /// position only).
  virtual void channel_history(std::string channel, std::size_t limit, history_done done) = 0;

  /// Takes a new SSE session: creates its connection actor, then calls
  /// `session->start(events)`.
  virtual void open_sse(std::shared_ptr<sse::sse_session> session, sse_subscription sub) = 0;

  /// Takes a WebSocket session whose handshake is done: creates its
  /// connection actor, then calls `session->start(events)`.
  virtual void open_ws(std::shared_ptr<ws::ws_session> session) = 0;

  /// What GET /healthz and Centrifugo's /api/info report.
  struct stats {
    bool cluster = false;        ///< cluster mode (Redis), else in-process
    std::size_t connections = 0; ///< client connections open on this instance
  };
  virtual stats current() = 0;

  /// JSON body of GET /healthz.
  virtual std::string health() = 0;

  /// GET /readyz: whether this instance should get new clients (cluster
  /// mode: Redis reachable), and why not.
  virtual bool ready(std::string& reason) = 0;

  /// An HTTP request was refused with `code` (for logs; the answer is sent
  /// already). `message` is the server's text, never the request target, so
  /// no query string (which may carry `token=`) reaches the log. `peer` is
  /// "address:port". Called on the session's shard thread; must return at once.
  virtual void request_refused(errc code, std::string_view message, std::string_view peer) {}

  /// A /v1/sse request (GET or OPTIONS) came from browser origin `origin`,
  /// neither this server nor in --allowed-origins: answered without CORS, so
  /// the browser will refuse it (for logs, with the hint; the metric is
  /// counted already). `origin` is the request's `Origin` header as sent;
  /// `peer` is "address:port". Called on the session's shard thread; must
  /// return at once.
  virtual void sse_origin_denied(std::string_view origin, std::string_view peer) {}

  /// True once shutdown began: new requests (on new or kept-alive
  /// connections) are refused with 503 shutting_down and the connection closed.
  virtual bool draining() const = 0;
};

} // namespace herald::net
