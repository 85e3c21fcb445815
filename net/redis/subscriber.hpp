// subscriber: one Redis pub/sub connection to one node, in either command
// family, chosen at create():
// - classic: SUBSCRIBE / UNSUBSCRIBE / `message`. Used by the standalone
//   client (client.hpp): one subscriber for every channel.
// - sharded (Redis 7): SSUBSCRIBE / SUNSUBSCRIBE / `smessage`. Used by the
//   Redis Cluster client (cluster_client.hpp): one subscriber per master
//   that owns the slot of a watched channel (it also works against a
//   standalone Redis 7).
//
// Created by a backend with create(), started with start(), ended with
// stop(). While started it keeps a connection up: it resolves the host,
// connects, logs in (AUTH, CLIENT SETNAME; or a PING when there is neither,
// so "connected" always means the server answered), subscribes the whole
// wanted set, and reports on_up once every channel wanted at that moment is
// confirmed or lost. A lost connection reconnects after the backoff of
// net/redis/backoff.hpp (`min_backoff` doubling to `max_backoff`, jittered,
// reset once a connection stayed up `max_backoff`) and subscribes the
// whole set again.
//
// Why not redis::connection: hiredis 0.14's async context drops PING
// replies in subscribed mode and asserts on ssubscribe / smessage
// (/work/shared/notes/hiredis-asio.md §0.5, §7). Here Asio owns the TCP
// socket (async_read_some / async_write) and hiredis only formats commands
// (redisFormatCommandArgv) and parses replies (redisReader).
//
// Channels: the bookkeeping is net/redis/channel_set.hpp. Changes are
// batched: all subscribe() / unsubscribe() calls of one executor turn go
// out in one socket write, as one SUBSCRIBE and one UNSUBSCRIBE with many
// arguments (classic) or as one SSUBSCRIBE / SUNSUBSCRIBE per hash slot
// (sharded: in a Redis Cluster every channel of one SSUBSCRIBE must hash to
// one slot). Per channel at most one command is in flight.
//
// Liveness: a PING every `heartbeat_interval` (answered ["pong", ""] in
// subscribed mode, +PONG otherwise; PING needs no channel permission, so an
// ACL user limited to `&<prefix>*` is enough). Replies come in order, so a
// PING not answered within `heartbeat_timeout` means a frozen server (or a
// stuck SUBSCRIBE) and drops the connection. `connect_timeout` bounds name
// resolution, TCP connect and the handshake.
//
// Refusals. Sharded: a node that stops serving a channel's slot (slot
// migration, failover) sends an unasked `sunsubscribe`, and an SSUBSCRIBE
// on a node that does not serve the slot is refused (MOVED <slot>
// <host:port>, ASK, CLUSTERDOWN ...); either way the channel leaves the
// wanted set and on_lost reports it, so the owner subscribes it on the
// right node. Classic: a refused SUBSCRIBE (NOPERM from an ACL without the
// channel) drops the connection with a reason naming it ("SUBSCRIBE of
// <channel> failed: NOPERM ..."); it is retried after the backoff.
//
// Threading: every member function except create() and get_executor() must
// run on the executor (a strand or a single-threaded io_context); callbacks
// run on it, must not block, and may call back into the subscriber.
// Lifetime: call stop() before dropping the last shared_ptr (pending Asio
// handlers hold weak references only, so dropping it also ends it, but
// stop() is what closes the socket at once). No event follows stop().
// Errors: never thrown; reported as the events below, with one-line reasons.
#pragma once

#include "net/asio.hpp"
#include "net/redis/backoff.hpp"
#include "net/redis/channel_set.hpp"
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
#include <vector>

struct redisReader;

namespace herald::net::redis {

/// The pub/sub command family of a subscriber.
enum class pubsub_mode {
  classic, ///< SUBSCRIBE / UNSUBSCRIBE / message (PUBLISH reaches every node of a cluster)
  sharded, ///< SSUBSCRIBE / SUNSUBSCRIBE / smessage (Redis 7; SPUBLISH stays in the shard)
};

/// Monotonic counters of one subscriber, for metrics and tests.
struct subscriber_counters {
  std::uint64_t messages = 0;             ///< messages handed to on_message
  std::uint64_t subscribe_commands = 0;   ///< (S)SUBSCRIBE commands sent
  std::uint64_t unsubscribe_commands = 0; ///< (S)UNSUBSCRIBE commands sent
  std::uint64_t writes = 0;               ///< socket writes of commands (batches)
  std::uint64_t pings = 0;                ///< heartbeat PINGs sent
  std::uint64_t ping_timeouts = 0;        ///< drops because a PING was not answered
  std::uint64_t lost = 0;                 ///< on_lost calls (moved or refused channels)
  std::uint64_t connect_attempts = 0;     ///< attempts started (resolve, connect, handshake)
  std::uint64_t connect_failures = 0;     ///< attempts that ended before on_up
  std::uint64_t connects = 0;             ///< handshakes completed
  std::uint64_t reconnects = 0;           ///< handshakes completed after the first
  std::uint64_t ups = 0;                  ///< on_up calls
};

class subscriber : public std::enable_shared_from_this<subscriber> {
public:
  using executor_type = asio::any_io_executor;

  /// Makes a stopped subscriber for `options.target` on `executor`,
  /// speaking `mode`'s commands. Uses from `options`: target (host, port,
  /// username, password; db is ignored: pub/sub has no databases),
  /// client_name, min/max_backoff, connect_timeout, heartbeat_interval /
  /// heartbeat_timeout (interval 0: no PING). Not command_timeout nor
  /// next_target. May be called from any thread.
  static std::shared_ptr<subscriber> create(executor_type executor, connection_options options,
                                            pubsub_mode mode);

  subscriber(const subscriber&) = delete;
  subscriber& operator=(const subscriber&) = delete;
  ~subscriber();

  // -- events (set before start(); run on the executor) -----------------------

  /// A message on a wanted channel; owned copies (move them on),
  /// binary-safe. Messages on channels no longer wanted are dropped.
  std::function<void(std::string channel, std::string payload)> on_message;
  /// Redis confirmed the subscription of a wanted channel. Called again
  /// after every reconnect (the resubscription), and again when a channel is
  /// unsubscribed and subscribed again. From here on its messages arrive
  /// until on_lost / on_down.
  std::function<void(const std::string& channel)> on_subscribed;
  /// After a (re)connect, once every channel wanted at that moment is
  /// confirmed or lost: from here on no message is missed until on_down.
  /// Channels subscribed later are reported by on_subscribed only.
  std::function<void()> on_up;
  /// Once after every on_up, when that connection is lost (not after
  /// stop()), with a one-line reason ("connection closed by the server",
  /// "heartbeat timeout: no PONG within 3000 ms", "SUBSCRIBE of <channel>
  /// failed: NOPERM ..."). A reconnect is already scheduled.
  std::function<void(const std::string& reason)> on_down;
  /// While not up: an attempt failed, with a one-line reason as
  /// last_error(): "connect: Connection refused", "AUTH failed: WRONGPASS
  /// ...", "connect timeout after 3000 ms", or, when the connection was
  /// lost before every channel was confirmed, one naming the command
  /// ("SUBSCRIBE of <channel> and 2 other channel(s) failed: <why>"). A
  /// reconnect is already scheduled. Optional.
  std::function<void(const std::string& reason)> on_attempt_failed;
  /// Sharded mode: `channel` is no longer subscribed here and left the
  /// wanted set. `error` is empty when Redis sent an unasked sunsubscribe
  /// (its slot left the node), else the error that refused the SSUBSCRIBE
  /// ("MOVED 866 127.0.0.1:7002", "ASK ...", "CLUSTERDOWN ..."). Never in
  /// classic mode (a refused SUBSCRIBE drops the connection instead).
  std::function<void(const std::string& channel, const std::string& error)> on_lost;

  // -- control ---------------------------------------------------------------

  /// Starts connecting (and reconnecting, until stop()). Calls after the
  /// first, or after stop(), do nothing.
  void start();
  /// Final: closes the socket at once, cancels the timers; no event follows.
  void stop();

  // -- channels --------------------------------------------------------------

  /// Adds channels (binary-safe names) to the wanted set. Nothing is sent at
  /// once: the changes of one executor turn go out together from a handler
  /// posted to the executor, or at flush(). Channels already wanted are
  /// ignored. While disconnected only the set changes; it is subscribed on
  /// connect.
  void subscribe(const std::vector<std::string>& channels);
  /// Removes channels from the wanted set (batched like subscribe()). Their
  /// messages stop at once, even before Redis confirms.
  void unsubscribe(const std::vector<std::string>& channels);
  /// Sends the pending changes now (no-op when there are none or while not
  /// connected).
  void flush();

  // -- properties ------------------------------------------------------------

  /// The command family given to create().
  pubsub_mode mode() const noexcept { return mode_; }
  /// The handshake completed on the current connection (possibly still
  /// resubscribing).
  bool connected() const noexcept { return ready_; }
  /// Between on_up and on_down.
  bool up() const noexcept { return up_; }
  /// `channel` is in the wanted set (subscribe() called, unsubscribe() not,
  /// not lost).
  bool wanted(const std::string& channel) const { return channels_.wanted(channel); }
  /// Wanted, and Redis confirmed it on the current connection.
  bool confirmed(const std::string& channel) const { return channels_.confirmed(channel); }
  /// Size of the wanted set.
  std::size_t wanted_count() const noexcept { return channels_.wanted_count(); }
  /// Channels Redis has confirmed on the current connection.
  std::size_t confirmed_count() const noexcept { return channels_.confirmed_count(); }
  const subscriber_counters& counters() const noexcept { return counters_; }
  /// The node it connects to.
  const url& target() const noexcept { return options_.target; }
  /// Why the last attempt failed or the last connection was lost; empty
  /// before, and again once a handshake completes.
  const std::string& last_error() const noexcept { return last_error_; }
  /// Thread-safe.
  const executor_type& get_executor() const noexcept { return executor_; }

private:
  /// One command sent and not yet fully answered (replies come in order).
  struct pending {
    enum kind_t { handshake, subscribe, unsubscribe, ping } kind = handshake;
    std::string name;                  ///< handshake: the command, for the error text
    std::vector<std::string> channels; ///< (un)subscribe: in the order Redis confirms them
    std::size_t got = 0;               ///< confirmations received so far
  };
  /// The words of one command family.
  struct words {
    const char* subscribe;   ///< "SUBSCRIBE" / "SSUBSCRIBE"
    const char* unsubscribe; ///< "UNSUBSCRIBE" / "SUNSUBSCRIBE"
    const char* subscribed;  ///< confirmation kind: "subscribe" / "ssubscribe"
    const char* unsubscribed;
    const char* message; ///< "message" / "smessage"
  };

  subscriber(executor_type executor, connection_options options, pubsub_mode mode);

  void connect();
  void on_connected();
  void handshake_done();
  void read();
  void on_reply(reply r);
  void on_subscribe_confirmed(const std::string& channel);
  void on_unsubscribe_confirmed(const std::string& channel);
  void on_error_reply(const std::string& text);
  void on_pong();
  void drop(const std::string& reason);
  /// Closes the socket and cancels its waits (resolve, connect timeout,
  /// heartbeat): handlers of this connection that still run see a newer
  /// generation and do nothing. Forgets what was pending on it.
  void close_connection();
  void schedule_reconnect();
  void send(const std::vector<std::string>& args, pending p);
  void write_more();
  void schedule_flush();
  void check_up();
  void arm_ping(std::chrono::milliseconds after);
  void on_ping_timer();
  void report_lost(const std::string& channel, const std::string& error);
  /// "SUBSCRIBE of a" or "SUBSCRIBE of a and 2 other channel(s)".
  std::string naming(const std::vector<std::string>& channels) const;

  executor_type executor_;
  connection_options options_;
  pubsub_mode mode_;
  words words_;
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
  unsigned gen_ = 0; ///< bumped per connection attempt and at drop: stale handlers return
  unsigned ping_gen_ = 0;
  bool ping_outstanding_ = false;
  backoff backoff_;
  std::size_t handshake_left_ = 0;
  bool socket_open_ = false;
  bool ready_ = false;
  bool up_ = false;
  bool started_ = false;
  bool stopped_ = false;
  bool flush_posted_ = false;
  std::string last_error_;
  channel_set channels_;
  subscriber_counters counters_;
};

} // namespace herald::net::redis
