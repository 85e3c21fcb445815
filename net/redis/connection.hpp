// connection: one reconnecting Redis command connection (hiredis 0.14 async
// context driven by Asio, see net/redis/hiredis_asio.hpp).
//
// Created by whoever talks to Redis (the Redis gateway's backend) with
// create(), started with start(), ended with stop(). While started it keeps
// a connection up: it resolves the host without blocking, connects with a
// timeout, logs in (AUTH, SELECT, CLIENT SETNAME, SCRIPT LOAD of the
// registered scripts), and then reports on_up. A lost connection, a command
// without reply for `command_timeout`, or a PING heartbeat left without any
// reply for `heartbeat_timeout` drops the connection; every pending
// command's callback then gets reply::disconnected() (or reply::not_sent()
// when its bytes never left), on_down(reason) is called and the connection
// reconnects after a capped exponential backoff with jitter.
// Many commands may be in flight at once (pipelining); replies arrive in
// order, and Redis runs a connection's commands one after the other, so a
// command's timeout counts from when Redis could start it: its sending, or
// the arrival of the reply before it, whichever is later. A blocking command
// (WAIT) thus delays the commands behind it without making them time out.
//
// Threading: everything runs on the executor given to create() (a strand or
// a single-threaded io_context). Every member function except create() and
// get_executor() must be called on that executor; other threads and actors
// asio::post() onto it. Callbacks (on_up, on_down, reply callbacks) run on
// it too and must not block.
//
// Lifetime: the connection keeps itself alive while it has a socket or a
// pending timer. Call stop() before dropping the last shared_ptr, otherwise
// it lives (and reconnects) until its executor's io_context is destroyed.
// Drop the last shared_ptr on the executor, or once no thread runs it.
//
// Not for SUBSCRIBE: a subscribed connection only takes (UN)SUBSCRIBE; use
// redis::subscriber (net/redis/subscriber.hpp).
#pragma once

#include "net/asio.hpp"
#include "net/redis/backoff.hpp"
#include "net/redis/reply.hpp"
#include "net/redis/url.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

struct redisAsyncContext;

namespace herald::net::redis {

/// Receives the owned copy of one reply. Called exactly once per command
/// (unless the io_context is destroyed first), on the connection's executor,
/// never before command() returns. When the
/// connection was lost, stopped or timed out before the reply arrived (or the
/// command could not be sent), the reply is `reply::disconnected()`: kind
/// error, text "disconnected" (check with reply::is_disconnected()); its
/// `never_sent` is true (reply::not_sent()) when the command's bytes were
/// never all written to the socket, so Redis certainly did not run it, and
/// false when they were: Redis may have run it.
using reply_fn = std::function<void(reply)>;

/// Tuning of a connection (and of a subscriber, see subscriber.hpp).
/// A duration of 0 turns the feature off where noted.
struct connection_options {
  /// Where to connect and how to log in (parse_url()).
  url target;
  /// CLIENT SETNAME on connect (visible in CLIENT LIST); empty: none.
  /// Redis allows no spaces in it.
  std::string client_name;
  /// First reconnect delay; doubles after every failed attempt, and after
  /// every connection lost within `max_backoff` of its handshake, up to
  /// `max_backoff`; reset when a connection that stayed up at least
  /// `max_backoff` is lost. So a server that accepts the handshake and then
  /// closes the connection at once (an ACL refusing the first command, a
  /// subscriber's SUBSCRIBE refused) is retried with the same growing delay
  /// as a refused connect, not many times a second. Each delay is drawn
  /// uniformly from [d/2, d] (jitter), so never longer than `max_backoff`
  /// (net/redis/backoff.hpp).
  std::chrono::milliseconds min_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
  /// Bound on one attempt: name resolution, TCP connect and handshake
  /// (hiredis 0.14 has no connect timeout). 0: none.
  std::chrono::milliseconds connect_timeout{3000};
  /// A command whose reply has not arrived this long after Redis could
  /// start it (its sending, or the arrival of the previous reply, whichever
  /// is later) drops the connection (hiredis 0.14 has no command timeout).
  /// 0: none. Blocking commands (BLPOP, WAIT) must use a server-side timeout
  /// below this one.
  std::chrono::milliseconds command_timeout{5000};
  /// PING sent this long after the previous PONG. 0: no heartbeat.
  std::chrono::milliseconds heartbeat_interval{1000};
  /// A PING outstanding while no reply at all arrived for this long (counted
  /// from the PING's sending or the last reply, whichever is later) drops the
  /// connection (a frozen server keeps TCP up and is noticed only this way).
  /// A PING queued behind a blocking WAIT whose replies keep coming is not a
  /// frozen server. Keep it above the longest blocking command's timeout.
  std::chrono::milliseconds heartbeat_timeout{3000};
  /// When set, called on the executor before every connection attempt; the
  /// attempt goes to the URL it returns instead of `target` (a Redis Cluster
  /// client rotates through its seeds and the nodes it knows, so a dead
  /// node is not retried forever). Must not block.
  std::function<url()> next_target;
};

/// Monotonic counters of one connection, for metrics and tests.
struct connection_counters {
  std::uint64_t connect_attempts = 0;   ///< attempts started (resolve or TCP connect)
  std::uint64_t connect_failures = 0;   ///< attempts that ended before on_up
  std::uint64_t connects = 0;           ///< handshakes completed (= on_up calls)
  std::uint64_t reconnects = 0;         ///< handshakes completed after the first
  std::uint64_t disconnects = 0;        ///< connections lost after on_up (= on_down calls)
  std::uint64_t command_timeouts = 0;   ///< drops because a reply was late
  std::uint64_t heartbeat_timeouts = 0; ///< drops because no reply came while a PING waited
  std::uint64_t script_fallbacks = 0;   ///< EVALSHA answered NOSCRIPT, resent as EVAL
};

/// Reports the end of a connection attempt or of a connection to the
/// callback that names it, as connection and subscriber do: `on_down(reason)`
/// when the connection had come up (`was_up`), else
/// `on_attempt_failed(reason)`; an unset callback is skipped. `reason` is the
/// one-line text the callback gets. Call it last: either callback may call
/// stop() on its client. Never throws (beyond what the callback throws).
void report_loss(bool was_up, const std::string& reason,
                 const std::function<void(const std::string&)>& on_down,
                 const std::function<void(const std::string&)>& on_attempt_failed);

/// Handle of a script registered with connection::add_script().
struct script_id {
  std::size_t index = 0;
};

class connection : public std::enable_shared_from_this<connection> {
public:
  using executor_type = asio::any_io_executor;

  /// Makes a stopped connection that will run on `executor`. Nothing
  /// happens until start(). May be called from any thread.
  static std::shared_ptr<connection> create(executor_type executor, connection_options options);

  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection();

  // -- events (set before start(); run on the executor) -----------------------

  /// After every successful connect and handshake. Commands may be sent from
  /// here; stop() and drop() are allowed too.
  std::function<void()> on_up;
  /// Once after every on_up, when that connection is lost (not after stop()),
  /// with a one-line reason ("connection lost: Server closed the connection",
  /// "command timeout ...", "heartbeat timeout ..."). Pending callbacks have
  /// already got reply::disconnected(). A reconnect is already scheduled.
  std::function<void(const std::string& reason)> on_down;

  /// After every attempt that ended before on_up (connect refused or timed
  /// out, name not resolved, AUTH or another handshake command refused),
  /// with a one-line reason as last_error(): "connect: Connection refused",
  /// "AUTH failed: WRONGPASS ...", "CLIENT SETNAME failed: NOAUTH ...".
  /// A reconnect is already scheduled. Optional.
  std::function<void(const std::string& reason)> on_attempt_failed;

  // -- control ---------------------------------------------------------------

  /// Starts connecting (and reconnecting, until stop()). Calls after the
  /// first, or after stop(), do nothing. Executor only.
  void start();

  /// Final: closes the connection at once, cancels the timers and never
  /// reconnects. Pending commands get reply::disconnected() (synchronously
  /// unless called from inside a reply callback, then right after it);
  /// on_down is not called. Safe from any callback. Executor only.
  void stop();

  /// Closes the current connection at once (pending commands get
  /// reply::disconnected(), on_down(reason) follows if it was up) and
  /// reconnects after the backoff. No-op while not connected. Safe from any
  /// callback. Executor only.
  void drop(std::string reason);

  // -- commands --------------------------------------------------------------

  /// Sends one command (`args` are binary-safe: {"SET", "k", "v"}) and
  /// pipelines it behind the commands already in flight. `cb` gets the reply
  /// (see reply_fn), exactly once.
  /// @returns true if sent; false when the connection is not up (or `args`
  ///          is empty): `cb` is then posted with reply::disconnected() (or
  ///          an "ERR empty command" error). Executor only.
  bool command(std::vector<std::string> args, reply_fn cb = {});

  /// Registers a Lua script. It is loaded with SCRIPT LOAD now (when up) and
  /// in the handshake of every later connect, so its sha stays known.
  /// @returns the handle for eval_script(). Executor only.
  script_id add_script(std::string source);

  /// Runs a registered script: EVALSHA with `keys` and `args`, falling back
  /// to EVAL with the source (which reloads it) when Redis answers NOSCRIPT
  /// (script cache flushed, or a server that restarted since SCRIPT LOAD).
  /// Uses EVAL directly while the sha is unknown. `cb` as for command(): the
  /// script's result, or an error reply (a Lua error, or disconnected).
  /// @returns as command(); false also for an unknown `id`. Executor only.
  bool eval_script(script_id id, std::vector<std::string> keys, std::vector<std::string> args,
                   reply_fn cb = {});

  // -- properties ------------------------------------------------------------

  /// True between on_up and the loss of that connection. Executor only.
  bool connected() const noexcept;
  /// Commands sent and not yet answered (including internal PING, AUTH, ...).
  std::size_t in_flight() const noexcept { return in_flight_.size(); }
  /// The sha1 (40 hex digits) of a registered script; empty while unknown.
  const std::string& script_sha(script_id id) const;
  /// Monotonic counters (attempts, reconnects, timeouts, ...).
  const connection_counters& counters() const noexcept { return counters_; }
  /// Why the last attempt failed or the last connection was lost; empty before.
  const std::string& last_error() const noexcept { return last_error_; }
  /// The options given to create().
  const connection_options& options() const noexcept { return options_; }
  /// Thread-safe.
  const executor_type& get_executor() const noexcept { return executor_; }

private:
  enum class state { idle, resolving, connecting, handshaking, up, backoff, stopped };
  enum class step { auth, select, set_name, load_script, ping };

  struct script_entry {
    std::string source;
    std::string sha;
  };

  connection(executor_type executor, connection_options options);

  // Attempts and losses.
  void begin_attempt();
  void connect_to(const std::string& address);
  void send_handshake();
  void on_handshake_reply(step s, std::size_t script_index, const reply& r);
  void become_up();
  void handle_loss(const std::string& reason);
  void context_gone();
  void schedule_reconnect();
  void cancel_timers();
  void on_connect_timer();
  void on_command_timer();
  void on_heartbeat_timer();
  void arm_command_timer();

  // Sending. `send` requires a live context; returns false (cb posted) when
  // hiredis refuses the command (the context is being freed).
  bool send(const std::vector<std::string>& args, reply_fn cb);
  // Appends a command to hiredis's output buffer; counts its bytes in
  // appended_. Returns hiredis's status.
  int append(const std::vector<std::string>& args, void (*fn)(redisAsyncContext*, void*, void*),
             void* privdata);
  // When Redis could start the oldest command in flight (in_flight_ not empty).
  std::chrono::steady_clock::time_point front_start() const;
  void post_reply(reply_fn cb, reply r);
  void load_script(std::size_t index);

  template <class Member>
  void arm(asio::steady_timer& timer, unsigned& generation,
           std::chrono::steady_clock::duration after, Member member);
  static void disarm(asio::steady_timer& timer, unsigned& generation);

  // hiredis callbacks (ac->data is the connection).
  static void on_connect_cb(const redisAsyncContext* ac, int status) noexcept;
  static void on_disconnect_cb(const redisAsyncContext* ac, int status) noexcept;
  static void on_reply_cb(redisAsyncContext* ac, void* r, void* privdata) noexcept;

  executor_type executor_;
  connection_options options_;
  asio::ip::tcp::resolver resolver_;
  asio::steady_timer connect_timer_;
  asio::steady_timer backoff_timer_;
  asio::steady_timer command_timer_;
  asio::steady_timer heartbeat_timer_;
  unsigned connect_gen_ = 0;
  unsigned backoff_gen_ = 0;
  unsigned command_gen_ = 0;
  unsigned heartbeat_gen_ = 0;
  unsigned resolve_gen_ = 0;

  state state_ = state::idle;
  redisAsyncContext* ac_ = nullptr;
  std::shared_ptr<connection> hold_; // set while hiredis owns a context pointing at us
  bool tcp_connected_ = false;
  bool freeing_ = false;
  bool in_connect_callback_ = false;
  bool command_timer_armed_ = false;
  bool ping_outstanding_ = false;
  std::size_t handshake_remaining_ = 0;
  std::string drop_reason_;
  std::string last_error_;
  backoff backoff_;

  // The regular commands in flight, oldest first (hiredis answers them in
  // order, so the front is the one to time out first): when each was sent,
  // and where its bytes end in the stream this context has written.
  struct pending {
    std::chrono::steady_clock::time_point sent;
    std::uint64_t end = 0;
  };
  std::deque<pending> in_flight_;
  // Bytes handed to hiredis's output buffer on the current context; minus
  // what is still in that buffer, the bytes written to the socket.
  std::uint64_t appended_ = 0;
  // When the last reply arrived on the current context (epoch when none):
  // the command after it could start no earlier.
  std::chrono::steady_clock::time_point last_reply_at_{};
  std::chrono::steady_clock::time_point ping_sent_at_{};
  std::vector<script_entry> scripts_;
  connection_counters counters_;
};

} // namespace herald::net::redis
