// stream_session: the body both transports share once a client is streaming
// (SSE after its response head, WebSocket after its handshake): the bounded
// outbound queue with its high-water mark, gathered writes, the write
// timeout, close with its grace time, the per-channel delivery state
// (net/core/subscription_table.hpp) and both seams: session_control for the connection
// actor, delivery_sink for the channels (net/fanout.hpp).
//
// Threads: the session lives on one I/O shard (net/core/io_shard.hpp). Every
// handler, and every on_* method, runs on that shard's thread; session_control's
// methods may be called from any thread and go through the shard's queue.
// The session is held by shared_ptr: by its pending I/O handlers, its
// connection actor, and the channels it subscribes to; it reports
// session_events::on_closed exactly once, and ignores everything after.
//
// What the client reads comes from the session's codec
// (net/wire/session_codec.hpp), chosen by the transport when the stream
// opens; this class never asks which one it is.
//
// Overflow policy (backpressure): the policy is per subscription, from its
// channel's class (net/wire/channel_class.hpp). Publications of a
// subscription with `conflate` carry its conflation key into the queue,
// which holds at most one pending publication per key at all times
// (net/core/outbound_queue.hpp). When the bytes conflation cannot shed
// (everything else, in flight included) cross the mark (--client-max-buffer),
// policy `close`: the session closes the client itself as slow_client (what
// is queued is dropped; its codec writes the close: WebSocket 1013, SSE a
// last herald.gap) and reports session_events::on_closed(slow_client) to the
// connection actor. A channel never waits for a subscriber.
//
// Writes: one non-blocking writev of what is queued; what the socket did
// not take goes back to the queue (outbound_queue::requeue_unwritten), so
// only the rest of a message the socket cut is ever held in flight: newer
// publications still replace what waits, and a close's signal goes right
// after that message. Once a subscription is conflated the kernel may hold
// only session_options::conflate_unsent_bytes unsent (TCP_NOTSENT_LOWAT) and
// one writev hands it at most that much, so that what a slow link cannot
// take waits in the queue, where it conflates.
//
// Close: the final bytes (and a WebSocket client's close answer) get a grace
// time that counts bytes moving (close_request::grace, --close-grace-ms):
// while the peer acknowledges bytes within each grace, the wait goes on, up
// to --close-grace-max-ms; a peer that acknowledges nothing is closed
// without them (docs/protocol.md "Slow-client close").
//
// Slow links (a connection with a conflated subscription): a write that
// outlasts --write-timeout, or a pong later than --ws-pong-timeout, does not
// close the connection while the peer's TCP keeps acknowledging bytes
// (TCP_INFO tcpi_bytes_acked grew since the last check): on a link of a few
// kB/s what is already in the kernel's and the network's buffers takes
// longer than those timeouts, and the peer is reading. A peer that
// acknowledges nothing is closed as before.
//
// Deadlines: one timer per session, armed at the earliest of its deadlines
// (the close's grace, the write timeout, the earliest pending subscribe's
// timeout, and the transport's own: heartbeat, WebSocket message timeout),
// so an idle connection holds one timer, not one per purpose. A deadline
// moved later or cleared leaves the timer where it is: it wakes, finds
// nothing due and sleeps until the next one.
//
// Subscribe timeout (session_options::subscribe_timeout, cluster mode): due
// at the earliest pending subscribe's time; the table answers what is
// overdue and the actor is told once per subscribe
// (session_events::on_subscribe_timeout).
#pragma once

#include "net/asio.hpp"
#include "net/session_control.hpp"
#include "net/core/io_shard.hpp"
#include "net/core/outbound_queue.hpp"
#include "net/session_events.hpp"
#include "net/core/session_options.hpp"
#include "net/core/subscription_table.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

namespace herald::net {

class stream_session : public session_control,
                       protected subscription_table::output,
                       public std::enable_shared_from_this<stream_session> {
public:
  /// Keeps `token` (the connection's per-address slot, net/core/connection_limit.hpp)
  /// until this session is destroyed.
  void hold(std::shared_ptr<void> token) { slot_ = std::move(token); }

  /// SSE: the connection's filter (`?event=`, net/wire/tags_filter.hpp),
  /// applied to every channel of begin(). Call before start(), on the
  /// shard's thread.
  void filter_every_channel(tags_filter_ptr filter) { begin_filter_ = std::move(filter); }

  /// Remote endpoint as "address:port", for logs.
  const std::string& peer() const noexcept { return peer_; }

  // -- session_control (any thread) --------------------------------------------
  void send(std::string message) override;
  void close(close_request req) override;
  void begin(std::vector<std::string> channels, std::vector<sse::cursor_entry> cursor) override;
  void expect(std::string channel, std::uint64_t request, nlohmann::json id,
              std::optional<stream_position> since, bool reject_unrecovered,
              bool delta = false, tags_filter_ptr filter = nullptr) override;
  void forget(std::string channel, std::optional<nlohmann::json> unsub_id) override;
  void revoke(std::string channel, std::string why) override;

  // -- delivery_sink (the shard's thread) -------------------------------
  shard& home() noexcept override { return *shard_; }
  void on_answer(const subscription_answer& a) override;
  void on_publication(const publication_ptr& p) override;

protected:
  /// @param socket connected socket on one shard's io_context.
  /// @param codec what the client reads (outlives the session: a static
  ///        codec, or one the derived session holds in an earlier base).
  /// @param opts shared with the listener's other sessions (never null).
  stream_session(tcp::socket socket, session_options_ptr opts, metrics::transport kind,
                 const session_codec& codec);

  /// Queues bytes (prefix, then body) and starts a write if none is in
  /// flight. Applies the high-water mark (the slow-client close). @param
  /// accepted_ns when the publication in `body` was accepted
  /// (net/obs/metrics.hpp now_ns()), for publish-to-write latency; 0 for
  /// anything that is not a publication. @param key the conflation key of
  /// the publication's subscription (outbound_queue::push), 0 for none.
  void push(std::string&& prefix, frame body, std::int64_t accepted_ns = 0,
            outbound_queue::conflation_key key = 0);
  /// Closes as `req` says (see session_control::close); on the shard thread.
  void on_close(close_request req);
  /// Closes the socket, cancels timers, reports on_closed once.
  void finish(close_reason reason);

  // -- subscription_table::output ------------------------------------------
  using conflation_key = subscription_table::conflation_key;
  void write_publication(const publication& p, std::string prefix, const frame& body,
                         std::int64_t accepted_ns, conflation_key key) override;
  void write_message(std::string id_line, std::string body) override;

  // -- what a transport adds ----------------------------------------------
  /// Queues `message` (a session_control::send() message, or a table message) in the
  /// transport's encoding, after `prefix` (SSE: an id line).
  virtual void push_message(std::string prefix, frame message, std::int64_t accepted_ns) = 0;
  /// Queues the transport's last bytes for `req` (the close is in progress).
  virtual void push_final(close_request& req) = 0;
  /// Everything queued while closing was written: finish now, or wait (the
  /// grace timer finishes anyway).
  virtual void on_final_written() { finish(closing_reason_); }
  /// The session finished (the socket is closed, the timer cancelled).
  virtual void on_finished() {}

  // -- deadlines (the shard's thread) -----------------------------------------
  using clock = std::chrono::steady_clock;
  /// What a deadline is for; the first three are this class's.
  enum class deadline : std::uint8_t { grace, write, subscribe, heartbeat, message };
  /// Sets `which` to pass at `at` (replacing its earlier setting); the
  /// timer is re-armed only when `at` is before the time it is armed at.
  void set_deadline(deadline which, clock::time_point at);
  /// Clears `which` (the timer may wake for nothing, once).
  void clear_deadline(deadline which) { deadlines_[index(which)] = unset; }
  bool deadline_set(deadline which) const noexcept { return deadlines_[index(which)] != unset; }
  /// A transport's deadline (heartbeat, message) passed, and was cleared; the
  /// session is neither closed nor finished. Set it again to repeat it.
  virtual void on_deadline(deadline) {}

  tcp::socket socket_;
  session_options_ptr opts_holder_;
  const session_options& opts_; ///< *opts_holder_
  metrics::transport kind_;
  shard* shard_;
  outbound_queue queue_;
  subscription_table table_;
  tags_filter_ptr begin_filter_; ///< SSE: filter_every_channel()
  std::shared_ptr<session_events> events_;
  std::chrono::steady_clock::time_point write_started_; ///< start of the last write
  std::string peer_;
  close_reason closing_reason_ = close_reason::client;
  bool closing_ = false;
  bool closed_ = false;
  bool unsent_capped_ = false; ///< TCP_NOTSENT_LOWAT set (a conflated subscription)
  bool stalled_ = false;           ///< the last write left bytes unwritten
  bool awaiting_writable_ = false; ///< waiting until the socket can take more
  std::uint64_t acked_at_write_check_ = 0; ///< bytes_acked() at the last write deadline
  std::uint64_t acked_at_grace_check_ = 0; ///< bytes_acked() when the close's grace was set
  std::chrono::milliseconds grace_{0};     ///< the close's grace (no progress)
  clock::time_point grace_end_{};          ///< the close's grace_max from its start

  /// A write is under way: items in flight, or the session waits until the
  /// socket can take more (what it did not take is queued again).
  bool write_busy() const noexcept { return queue_.writing() || awaiting_writable_; }

  /// Bytes the peer's TCP acknowledged so far (Linux TCP_INFO
  /// tcpi_bytes_acked); 0 when it cannot be read. The shard's thread.
  std::uint64_t bytes_acked() const noexcept;

private:
  void do_write();
  void on_write(beast::error_code ec, std::size_t bytes);
  /// Bookkeeping of a completed write of `bytes` (the items in flight);
  /// false if the session closed meanwhile (the close's last bytes went
  /// out and the queue is empty).
  bool written(std::size_t bytes);
  /// Sets the subscribe deadline at the table's next due subscribe, unless set.
  void arm_subscribe_timer();
  /// The timer woke: runs every deadline that passed, re-arms for the rest.
  void on_timer();
  /// Arms the timer at the earliest deadline, if that is before timer_at_.
  void arm_timer();
  void give_up_overdue_subscribes();

  static constexpr std::size_t deadline_count = 5;
  static constexpr clock::time_point unset = clock::time_point::max();
  static constexpr std::size_t index(deadline d) noexcept { return static_cast<std::size_t>(d); }

  std::vector<std::string_view> views_;
  std::vector<asio::const_buffer> buffers_;
  asio::steady_timer timer_;
  std::array<clock::time_point, deadline_count> deadlines_{unset, unset, unset, unset, unset};
  clock::time_point timer_at_ = unset; ///< when the pending wait ends; unset: none pending
  std::shared_ptr<void> slot_; ///< per-address connection count
};

} // namespace herald::net
