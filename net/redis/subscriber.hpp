// subscriber: the Redis pub/sub connection. Keeps the set of wanted
// channels, sends SUBSCRIBE / UNSUBSCRIBE in batches, subscribes the whole
// set again after every reconnect, and hands every message on.
//
// Created by the Redis gateway's backend with create(), started with
// start(), ended with stop(). It owns a private redis::connection (same
// options, same reconnect and backoff; the connection's PING heartbeat is
// off, because hiredis 0.14 drops PING replies in subscribed mode).
// Liveness is checked instead by re-SUBSCRIBing a private probe channel
// every `heartbeat_interval`: Redis confirms every SUBSCRIBE, so a missing
// confirmation after `heartbeat_timeout` means a frozen server and drops
// the connection. The probe channel stays subscribed for the connection's
// whole life, so the connection never leaves subscribed mode.
//
// Per channel at most one SUBSCRIBE or UNSUBSCRIBE is in flight: a channel
// wanted again while its UNSUBSCRIBE is unconfirmed is subscribed when the
// confirmation arrives, so the subscriber's view always matches Redis's.
//
// Threading: as connection (net/redis/connection.hpp): every member function
// except create() and get_executor() on the executor; callbacks run on it.
// Lifetime: call stop() before dropping the last shared_ptr (on the
// executor, or once no thread runs it); the connection inside would
// otherwise keep reconnecting.
//
// Only SUBSCRIBE is supported: no PSUBSCRIBE (not needed), no SSUBSCRIBE
// (hiredis 0.14 aborts on it, see /work/shared/notes/hiredis-asio.md §7).
// Used by the standalone client (client.hpp); the Redis Cluster client uses
// sharded pub/sub through shard_subscriber.hpp instead.
#pragma once

#include "net/asio.hpp"
#include "net/redis/connection.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace herald::net::redis {

/// Monotonic counters of one subscriber, for metrics and tests.
struct subscriber_counters {
  std::uint64_t messages = 0;             ///< messages handed to on_message
  std::uint64_t subscribe_commands = 0;   ///< SUBSCRIBE commands sent (probes excluded)
  std::uint64_t unsubscribe_commands = 0; ///< UNSUBSCRIBE commands sent
  std::uint64_t probes = 0;               ///< probe SUBSCRIBEs sent
  std::uint64_t probe_timeouts = 0;       ///< drops because a probe was not confirmed
  std::uint64_t ups = 0;                  ///< on_up calls
};

class subscriber : public std::enable_shared_from_this<subscriber> {
public:
  using executor_type = connection::executor_type;

  /// Makes a stopped subscriber on `executor`. `options` as for connection;
  /// `heartbeat_interval` / `heartbeat_timeout` drive the probe (0: no
  /// probe); `command_timeout` bounds the handshake commands only.
  /// `prefix` starts the probe channel's name (`<prefix>__herald_probe:<hex>`),
  /// so an ACL that allows only the prefix's channels (`&<prefix>*`) allows
  /// it too: Herald's --redis-prefix.
  /// May be called from any thread.
  static std::shared_ptr<subscriber> create(executor_type executor, connection_options options,
                                            const std::string& prefix = {});

  subscriber(const subscriber&) = delete;
  subscriber& operator=(const subscriber&) = delete;
  ~subscriber();

  // -- events (set before start(); run on the executor) -----------------------

  /// A message on a wanted channel; both strings are owned copies (move them
  /// on). Binary-safe. Messages on channels no longer wanted are dropped.
  std::function<void(std::string channel, std::string payload)> on_message;
  /// Redis confirmed the subscription of a wanted channel. Called again
  /// after every reconnect (the resubscription), and possibly more than once
  /// per connection when a channel is unsubscribed and subscribed again.
  std::function<void(const std::string& channel)> on_subscribed;
  /// After a (re)connect, once every channel wanted at that moment (and the
  /// probe channel) is confirmed: from here on no message is missed until
  /// on_down. Channels subscribed later are reported by on_subscribed only.
  std::function<void()> on_up;
  /// Once after every on_up, when that connection is lost (not after stop()),
  /// with a one-line reason. A reconnect is already scheduled.
  std::function<void(const std::string& reason)> on_down;
  /// While not up: an attempt failed, with a one-line reason: the
  /// connection's (connection::on_attempt_failed), or a connection lost
  /// before every channel was confirmed, naming the SUBSCRIBE
  /// ("SUBSCRIBE of <probe channel> and 2 other channel(s) failed: connection
  /// lost: NOPERM ..."). A reconnect is already scheduled. Optional.
  std::function<void(const std::string& reason)> on_attempt_failed;

  // -- control ---------------------------------------------------------------

  /// Starts connecting; subscribes the wanted set on every connect.
  void start();
  /// Final: closes the connection, cancels the timers; no event follows.
  void stop();

  // -- channels --------------------------------------------------------------

  /// Adds channels to the wanted set. Nothing is sent at once: all changes
  /// made in the same executor turn go out together as one SUBSCRIBE (and
  /// one UNSUBSCRIBE) with many arguments, from a handler posted to the
  /// executor, or at flush(). Channels already wanted are ignored. While
  /// disconnected only the set changes; it is subscribed on connect.
  void subscribe(const std::vector<std::string>& channels);
  /// Removes channels from the wanted set (batched like subscribe()). Their
  /// messages stop at once, even before Redis confirms.
  void unsubscribe(const std::vector<std::string>& channels);
  /// Sends the pending changes now (no-op when there are none or while
  /// disconnected).
  void flush();

  // -- properties ------------------------------------------------------------

  /// The underlying connection is up (possibly still resubscribing).
  bool connected() const noexcept;
  /// Between on_up and on_down.
  bool up() const noexcept { return up_; }
  /// `channel` is in the wanted set (subscribe() called, unsubscribe() not).
  bool wanted(const std::string& channel) const { return wanted_.count(channel) > 0; }
  /// Redis has confirmed `channel` on the current connection.
  bool confirmed(const std::string& channel) const;
  /// Size of the wanted set (the probe channel not included).
  std::size_t wanted_count() const noexcept { return wanted_.size(); }
  /// The private channel used as probe ("<prefix>__herald_probe:<random hex>").
  const std::string& probe_channel() const noexcept { return probe_channel_; }
  /// Counters of the subscriber itself.
  const subscriber_counters& counters() const noexcept { return counters_; }
  /// Counters of the underlying connection (reconnects, ...).
  const connection_counters& link_counters() const noexcept { return conn_->counters(); }
  /// The node it connects (or last connected) to.
  const url& target() const noexcept { return conn_->options().target; }
  /// Why the last attempt failed or the last connection was lost.
  const std::string& last_error() const noexcept { return conn_->last_error(); }
  /// Thread-safe.
  const executor_type& get_executor() const noexcept { return conn_->get_executor(); }

private:
  enum class channel_state { subscribing, subscribed, unsubscribing };

  subscriber(executor_type executor, connection_options options, const std::string& prefix);
  void install_handlers();

  void on_connection_up();
  void on_connection_down(const std::string& reason);
  void on_push(const redisReply& r);
  void on_confirm_subscribe(const std::string& channel);
  void on_confirm_unsubscribe(const std::string& channel);
  void schedule_flush();
  void check_up();
  void arm_probe(std::chrono::milliseconds after);
  void on_probe_timer();
  void send_probe();

  std::shared_ptr<connection> conn_;
  std::chrono::milliseconds probe_interval_;
  std::chrono::milliseconds probe_timeout_;
  asio::steady_timer probe_timer_;
  unsigned probe_gen_ = 0;
  std::string probe_channel_;

  std::unordered_set<std::string> wanted_;
  // What this connection asked Redis for, per channel (absent: nothing).
  std::unordered_map<std::string, channel_state> server_;
  // Channels changed since the last flush.
  std::unordered_set<std::string> dirty_;
  // Channels of the resubscription (and the probe) not yet confirmed.
  std::unordered_set<std::string> resubscribing_;
  bool flush_posted_ = false;
  bool probe_outstanding_ = false;
  bool up_ = false;
  bool stopped_ = false;
  subscriber_counters counters_;
};

} // namespace herald::net::redis
