// shard_subscriber: a Redis 7 sharded pub/sub connection (SSUBSCRIBE /
// SUNSUBSCRIBE / smessage) to ONE node. The Redis Cluster client
// (cluster_client.hpp) keeps one per master that owns slots of watched
// channels; it also works against a standalone Redis 7.
//
// Why not redis::connection: hiredis 0.14's async context does not know
// ssubscribe / smessage / sunsubscribe and asserts on them
// (/work/shared/notes/hiredis-asio.md §7). Here Asio owns the TCP socket
// (async_read_some / async_write) and hiredis only formats commands
// (redisFormatCommandArgv) and parses replies (redisReader).
//
// Like subscriber.hpp it keeps the set of wanted channels, sends changes in
// batches (all changes of one executor turn in one socket write), subscribes
// the whole set again after every reconnect (same backoff as connection.hpp:
// `min_backoff` doubling to `max_backoff`, jittered, reset once a connection
// stayed up `max_backoff`), and hands every message
// on. In Redis Cluster every channel of one SSUBSCRIBE must hash to one slot,
// so a batch is one SSUBSCRIBE per slot, pipelined in one write.
//
// Liveness: a PING every `heartbeat_interval` (in subscribed mode Redis
// answers ["pong", ""], otherwise +PONG); replies come in order, so a PING
// not answered within `heartbeat_timeout` means a frozen server (or a stuck
// SSUBSCRIBE) and drops the connection. `connect_timeout` bounds name
// resolution, TCP connect and the handshake (AUTH, CLIENT SETNAME).
//
// A node that stops serving a channel's slot (slot migration, failover)
// sends an unasked `sunsubscribe`; an SSUBSCRIBE on a node that does not
// serve the slot is refused with an error (MOVED <slot> <host:port>, ASK,
// CLUSTERDOWN...). Either way the channel leaves the wanted set and
// on_lost reports it: the owner of the subscriber resubscribes it on the
// right node. Per channel at most one SSUBSCRIBE or SUNSUBSCRIBE is in
// flight.
//
// Threading: every member function except create() and get_executor() must
// run on the executor (a strand or a single-threaded io_context); callbacks
// run on it and may call back into the subscriber.
// Lifetime: call stop() before dropping the last shared_ptr (pending Asio
// handlers hold weak references only, so dropping it also ends it, but
// stop() is what closes the socket at once). No event follows stop().
#pragma once

#include "net/asio.hpp"
#include "net/redis/connection.hpp"
#include "net/redis/reply.hpp"
#include "net/redis/url.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

struct redisReader;

namespace herald::net::redis {

/// Monotonic counters of one shard subscriber, for metrics and tests.
struct shard_subscriber_counters {
  std::uint64_t messages = 0;             ///< smessages handed to on_message
  std::uint64_t subscribe_commands = 0;   ///< SSUBSCRIBE commands sent
  std::uint64_t unsubscribe_commands = 0; ///< SUNSUBSCRIBE commands sent
  std::uint64_t writes = 0;               ///< socket writes of commands (batches)
  std::uint64_t pings = 0;                ///< PINGs sent
  std::uint64_t ping_timeouts = 0;        ///< drops because a PING was not answered
  std::uint64_t lost = 0;                 ///< on_lost calls (moved or refused channels)
  std::uint64_t connects = 0;             ///< handshakes completed
  std::uint64_t reconnects = 0;           ///< handshakes completed after the first
  std::uint64_t ups = 0;                  ///< on_up calls
};

class shard_subscriber : public std::enable_shared_from_this<shard_subscriber> {
public:
  using executor_type = asio::any_io_executor;

  /// Makes a stopped subscriber for `options.target` on `executor`. Uses
  /// from `options`: target (host, port, username, password; db is ignored:
  /// pub/sub has no databases), client_name, min/max_backoff,
  /// connect_timeout, heartbeat_interval / heartbeat_timeout (0: no PING).
  /// May be called from any thread.
  static std::shared_ptr<shard_subscriber> create(executor_type executor,
                                                  connection_options options);

  shard_subscriber(const shard_subscriber&) = delete;
  shard_subscriber& operator=(const shard_subscriber&) = delete;
  ~shard_subscriber();

  // -- events (set before start(); run on the executor) -----------------------

  /// An smessage on a wanted channel; owned copies, binary-safe.
  std::function<void(std::string channel, std::string payload)> on_message;
  /// Redis confirmed the SSUBSCRIBE of a wanted channel (again after every
  /// reconnect). From here on its messages arrive until on_lost / on_down.
  std::function<void(const std::string& channel)> on_subscribed;
  /// After a (re)connect, once every channel wanted at that moment is
  /// confirmed or lost.
  std::function<void()> on_up;
  /// Once after every on_up when that connection is lost (not after
  /// stop()), with a one-line reason. A reconnect is already scheduled.
  std::function<void(const std::string& reason)> on_down;
  /// `channel` is no longer subscribed here and was removed from the wanted
  /// set: `error` empty when Redis sent an unasked sunsubscribe (its slot
  /// left the node), else the error that refused the SSUBSCRIBE
  /// ("MOVED 866 127.0.0.1:7002", "ASK ...", "CLUSTERDOWN ...").
  std::function<void(const std::string& channel, const std::string& error)> on_lost;

  // -- control ---------------------------------------------------------------

  /// Starts connecting (and keeps reconnecting until stop()).
  void start();
  /// Final: closes the socket, cancels the timers; no event follows.
  void stop();

  // -- channels --------------------------------------------------------------

  /// Adds shard channels to the wanted set. Sent from a handler posted to
  /// the executor (all changes of one turn together) or at flush(); while
  /// disconnected only the set changes. Channels already wanted are ignored.
  void subscribe(const std::vector<std::string>& channels);
  /// Removes channels from the wanted set (batched like subscribe()); their
  /// messages stop at once, before Redis confirms.
  void unsubscribe(const std::vector<std::string>& channels);
  /// Sends the pending changes now (no-op when none or not connected).
  void flush();

  // -- properties ------------------------------------------------------------

  /// The handshake completed on the current connection.
  bool connected() const noexcept { return ready_; }
  /// Between on_up and on_down.
  bool up() const noexcept { return up_; }
  bool wanted(const std::string& channel) const { return wanted_.count(channel) > 0; }
  /// Redis confirmed `channel` on the current connection (and it is wanted).
  bool confirmed(const std::string& channel) const;
  /// Size of the wanted set.
  std::size_t wanted_count() const noexcept { return wanted_.size(); }
  /// Channels Redis confirmed on the current connection.
  std::size_t confirmed_count() const noexcept;
  const shard_subscriber_counters& counters() const noexcept { return counters_; }
  /// The node it connects to.
  const url& target() const noexcept { return options_.target; }
  /// Why the last attempt failed or the last connection was lost.
  const std::string& last_error() const noexcept { return last_error_; }
  /// Thread-safe.
  const executor_type& get_executor() const noexcept { return executor_; }

private:
  enum class channel_state { subscribing, subscribed, unsubscribing };
  struct pending {
    enum kind_t { handshake, ssubscribe, sunsubscribe, ping } kind = handshake;
    std::vector<std::string> channels; ///< in the order Redis confirms them
    std::size_t got = 0;               ///< confirmations received so far
  };

  shard_subscriber(executor_type executor, connection_options options);

  void connect();
  void on_connected();
  void read();
  void on_reply(reply r);
  void on_error_reply(const std::string& text);
  void drop(const std::string& reason);
  void schedule_reconnect();
  void send(const std::vector<std::string>& args, pending p);
  void write_more();
  void schedule_flush();
  void check_up();
  void arm_ping(std::chrono::milliseconds after);
  void on_ping_timer();
  void lose(const std::string& channel, const std::string& error);

  executor_type executor_;
  connection_options options_;
  tcp::socket socket_;
  tcp::resolver resolver_;
  asio::steady_timer retry_timer_;
  asio::steady_timer connect_timer_;
  asio::steady_timer ping_timer_;
  redisReader* reader_ = nullptr;
  std::array<char, 16384> inbuf_{};
  std::string outbuf_;  ///< commands waiting for the current write to finish
  std::string writing_; ///< the bytes of the write in flight
  std::deque<pending> pending_;
  unsigned gen_ = 0; ///< bumped per connection attempt: stale handlers return
  unsigned ping_gen_ = 0;
  bool ping_outstanding_ = false;
  std::chrono::milliseconds backoff_{0};
  std::chrono::steady_clock::time_point ready_since_; ///< handshake of the current connection
  std::size_t handshake_left_ = 0;
  bool socket_open_ = false;
  bool ready_ = false;
  bool up_ = false;
  bool started_ = false;
  bool stopped_ = false;
  bool flush_posted_ = false;
  std::string last_error_;

  std::unordered_set<std::string> wanted_;
  std::unordered_map<std::string, channel_state> server_;
  std::unordered_set<std::string> dirty_;
  std::unordered_set<std::string> resubscribing_;
  shard_subscriber_counters counters_;
};

} // namespace herald::net::redis
