// One subscriber connection (SSE or WebSocket) of a worker process, and the
// state it shares with the worker's other subscribers.
//
// A subscriber connects from a chosen loopback source address, performs the
// handshake (GET /v1/sse, or the WebSocket upgrade on /v1/ws followed by one
// subscribe per channel), then reads with a readiness wait and a read into
// the worker's shared buffer, so an idle connection holds no read buffer.
// Every publication it receives is checked per channel: latency from the
// send time in the data, duplicates and order by offset (Herald's SSE cursor
// or WebSocket offset) and by the publication's sequence number.
//
// The class is one object per connection (small: a worker holds thousands);
// its parts live in one file each:
//   subscriber.cpp                the connection: socket, handshake, read loop,
//                                 write queue, errors, timeouts, one delivery
//   subscriber_sse.cpp            SSE: the request, events, cursors
//   subscriber_ws.cpp             Herald's WebSocket protocol (/v1/ws)
//   subscriber_centrifugo.cpp     Centrifugo's protocol in JSON
//   centrifugo_protobuf.cpp       Centrifugo's protocol in Protobuf
//   subscription_track.*          the per-channel position and checks (pure)
#pragma once

#include "loadtest/histogram.hpp"
#include "loadtest/payload.hpp"
#include "loadtest/sse_parser.hpp"
#include "loadtest/subscription_track.hpp"
#include "loadtest/ws_client.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace herald::loadtest {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

/// Which protocol a subscriber speaks: SSE, Herald's WebSocket protocol
/// (/v1/ws) or Centrifugo's client protocol v2 (/connection/websocket,
/// docs/centrifugo.md) in JSON or in Protobuf (`?format=protobuf`, binary
/// messages of length-delimited Commands and Replies).
enum class transport { sse, ws, centrifugo, centrifugo_protobuf };

class subscriber;

/// What a subscriber tells its owner.
class subscriber_events {
public:
  virtual ~subscriber_events() = default;
  /// The handshake (and for WebSocket every subscription) completed,
  /// `took_ns` after the connection attempt started.
  virtual void on_established(subscriber& s, bool resumed, std::int64_t took_ns) = 0;
  /// The attempt failed before being established.
  virtual void on_failed(subscriber& s, bool resumed, const std::string& reason) = 0;
  /// An established connection ended without the worker asking.
  virtual void on_dropped(subscriber& s, const std::string& reason) = 0;
};

/// State shared by every subscriber of a worker (single-threaded).
struct subscriber_context {
  explicit subscriber_context(asio::io_context& io)
    : ioc(io) {}

  asio::io_context& ioc;
  std::vector<std::string> channel_names;               ///< by channel id
  std::vector<std::uint32_t> channel_hashes;            ///< net::sse::channel_hash of each name, by id
  std::vector<char> buf = std::vector<char>(64 * 1024); ///< shared read buffer
  delivery_counters counters;
  histogram latency;                            ///< publish-to-receive, ns, whole run
  histogram step_latency;                       ///< same, since the last snapshot
  std::map<std::string, std::uint64_t> notices; ///< gap reasons and other notices, counted
  std::mt19937_64 rng{12345};
  subscriber_events* events = nullptr;
};

/// Where and how one subscriber connects.
struct subscriber_spec {
  std::uint64_t index = 0; ///< global connection number
  transport kind = transport::sse;
  int target_index = 0; ///< index in the target list
  tcp::endpoint target;
  std::string host; ///< Host header ("127.0.0.1:8080")
  asio::ip::address_v4 source;
  std::vector<int> channels; ///< channel ids
  bool slow = false;         ///< stops reading once established
  bool deflate = false;      ///< WebSocket: offer permessage-deflate
  bool delta = false;        ///< Centrifugo JSON: subscribe with delta "fossil"
  /// Non-empty: subscribe with a filter passing only this event (SSE
  /// `?event=`, /v1/ws `filter`, Centrifugo JSON `tf`; not Protobuf).
  std::string filter_event;
};

class subscriber {
public:
  enum class state : std::uint8_t {
    idle,
    connecting,
    handshake,
    subscribing,
    established,
    failed,
    closed
  };

  /// A subscriber that does nothing until start().
  subscriber(subscriber_context& ctx, subscriber_spec spec);
  subscriber(const subscriber&) = delete;
  subscriber& operator=(const subscriber&) = delete;

  /// Opens a socket bound to (source, 0), connects and subscribes. With
  /// `resume`, resumes from the last position received (SSE Last-Event-ID,
  /// WebSocket `since`), so nothing published meanwhile is missed.
  void start(bool resume);
  /// Closes the connection on purpose (not reported as dropped).
  void drop();
  /// Fails an attempt that has not been established `timeout_ns` after it
  /// started; no effect otherwise.
  void check_timeout(std::int64_t now_ns, std::int64_t timeout_ns);
  /// For a slow subscriber at the end of a run: reads what is buffered and
  /// tells whether the server has closed the connection (EOF or reset).
  bool closed_by_server();

  /// Current state.
  state current() const noexcept { return state_; }
  /// True while an attempt started with resume is in progress.
  bool resuming() const noexcept { return resume_ && in_progress(); }
  /// True while connecting, in the handshake or subscribing.
  bool in_progress() const noexcept {
    return state_ == state::connecting || state_ == state::handshake ||
           state_ == state::subscribing;
  }
  /// True when a resume would send a position (SSE: an id was received).
  bool has_position() const noexcept;
  /// The connection's parameters (its channels: channel_count/channel_id).
  const subscriber_spec& spec() const noexcept { return spec_; }
  /// Number of channels the connection subscribes to.
  std::size_t channel_count() const noexcept { return tracks_.size(); }
  /// Channel id of the i-th subscription.
  int channel_id(std::size_t i) const noexcept { return tracks_[i].id; }

private:
  using track = subscription_track;

  // -- the connection (subscriber.cpp) -------------------------------------
  void on_connect(const boost::system::error_code& ec);
  void arm_read();
  void on_readable();
  void on_bytes(const char* p, std::size_t n, std::int64_t now);
  void on_head(std::string_view head, std::int64_t now);
  void established(std::int64_t now);
  /// WebSocket dialects: established once every channel's subscribe was answered.
  void established_if_all_subscribed();
  /// One delivery on `t`: counters, latency, then the track's checks.
  void on_publication(track& t, bool has_offset, std::uint64_t offset, const pub_fields& f,
                      std::int64_t now);
  /// The track of channel `name` (nullptr when not one of ours).
  track* find_track(std::string_view name) noexcept;
  /// The name of `t`'s channel.
  const std::string& channel_name(const track& t) const noexcept;
  /// A random mask for the next client frame (RFC 6455 §5.3).
  std::uint32_t next_mask() { return static_cast<std::uint32_t>(ctx_.rng()); }
  /// Sends one masked client frame.
  void send_frame(ws::opcode op, std::string_view payload);
  void send(std::string_view bytes);
  void flush();
  void on_io_error(const boost::system::error_code& ec, const char* what);
  void fail(const std::string& reason);
  void close_socket() noexcept;

  // -- SSE (subscriber_sse.cpp) ---------------------------------------------
  std::string sse_request() const;
  void on_sse_event(const sse_event& ev, std::int64_t now);
  void update_from_cursor(std::string_view cursor);

  // -- Herald's WebSocket protocol (subscriber_ws.cpp) ----------------------
  std::string ws_subscribe(const track& t, std::size_t request_id) const;
  void on_ws_message(ws::opcode op, std::string_view payload, std::int64_t now);
  void on_ws_control(std::string_view text);

  // -- Centrifugo JSON (subscriber_centrifugo.cpp) --------------------------
  /// Centrifugo: the frame sent after the handshake: connect, then one
  /// subscribe per channel (ids 2, 3, ...), newline-separated.
  std::string centrifugo_commands() const;
  /// Centrifugo JSON: a reply or push that is not a publication push.
  void on_centrifugo_control(std::string_view text, std::int64_t now);
  /// Centrifugo, either encoding: a reply or push (as JSON) that is not a
  /// publication push; a subscribe reply's `publications` have `data` and `offset`.
  void on_centrifugo_reply(const nlohmann::json& j, std::int64_t now);
  /// A publication object (`pub` of a push, or an entry of a subscribe
  /// reply's `publications`) on a delta subscription: its data (a JSON
  /// string, or with `delta` a Fossil delta against `t`'s base) rebuilt into
  /// `f`. False when it cannot be (counted unparsed by the caller).
  bool delta_fields(track& t, const nlohmann::json& pub, pub_fields& f);

  // -- Centrifugo Protobuf (centrifugo_protobuf.cpp) ------------------------
  /// Centrifugo Protobuf: connect and the subscribes, as delimited Commands
  /// (the same ids as centrifugo_commands()).
  std::string centrifugo_protobuf_commands() const;
  /// Centrifugo Protobuf: one binary message of delimited Replies.
  void on_protobuf_message(std::string_view payload, std::int64_t now);

  subscriber_context& ctx_;
  subscriber_spec spec_;
  tcp::socket socket_;
  std::vector<track> tracks_;
  sse_parser sse_;
  ws::frame_decoder ws_;
  std::string head_;      // handshake answer being read
  std::string ws_accept_; // expected Sec-WebSocket-Accept during the handshake
  std::string out_;       // bytes waiting to be written
  std::string wbuf_;      // bytes being written
  std::string deferred_;  // failure or drop decided inside a parser callback
  std::int64_t started_ns_ = 0;
  std::uint32_t gen_ = 0; // bumps on every close: stale completions are ignored
  state state_ = state::idle;
  bool resume_ = false;
  bool writing_ = false;
  bool deferred_drop_ = false;
};

} // namespace herald::loadtest
