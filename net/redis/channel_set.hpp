// channel_set: the channel bookkeeping of one Redis pub/sub connection,
// apart from its I/O (net/redis/subscriber.hpp does the socket, the RESP
// and the timers; this class decides what to send and what to report).
//
// It keeps two views of each channel and moves them together:
// - the wanted set: what the owner asked for (want() / unwant());
// - Redis's side on the current connection: nothing, `subscribing` (a
//   (S)SUBSCRIBE sent, unconfirmed), `subscribed`, or `unsubscribing` (an
//   (S)UNSUBSCRIBE sent, unconfirmed).
// Per channel at most one command is in flight: a channel wanted again while
// its UNSUBSCRIBE is unconfirmed is subscribed once the confirmation
// arrives (and the reverse), so the state always says what Redis will have
// once the commands sent so far are done.
//
// Changes are batched: want() and unwant() only mark a channel; the owner
// calls take_changes() once per executor turn (or at an explicit flush) and
// sends what it returns. After every (re)connect the whole wanted set is
// subscribed again, and the connection is *settled* (the subscriber's
// "up") once every channel wanted at that moment is confirmed, no longer
// wanted, or lost. A channel is *lost* when Redis refuses its SUBSCRIBE
// (Redis Cluster: MOVED, ASK, CLUSTERDOWN) or ends its subscription unasked
// (a sharded channel whose slot left the node): it leaves the wanted set,
// and the caller reports it to the owner, who decides where it goes.
//
// Pure: no I/O, no clock, no Asio; tested alone (tests/redis/channel_set.cpp).
// Not thread-safe: one owner, one thread.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace herald::net::redis {

class channel_set {
public:
  /// Redis's side of one channel on the current connection.
  enum class state { subscribing, subscribed, unsubscribing };

  /// What to send for the changes made since the last take_changes(): the
  /// channels to subscribe and to unsubscribe, each in ascending order.
  struct changes {
    std::vector<std::string> subscribe;
    std::vector<std::string> unsubscribe;
    bool empty() const noexcept { return subscribe.empty() && unsubscribe.empty(); }
  };

  // -- the wanted set ---------------------------------------------------------

  /// Adds `channel` to the wanted set. @returns true when it was not wanted
  /// (a change to send once connected).
  bool want(const std::string& channel);
  /// Removes `channel` from the wanted set; its messages are to be dropped
  /// from now on, before Redis confirms. @returns true when it was wanted.
  bool unwant(const std::string& channel);
  bool wanted(const std::string& channel) const { return wanted_.count(channel) > 0; }
  std::size_t wanted_count() const noexcept { return wanted_.size(); }

  // -- the connection ---------------------------------------------------------

  /// A new connection is ready (its handshake done): Redis has nothing yet,
  /// every wanted channel is a change, and settled() waits for each of them.
  void connected();
  /// The connection is gone: Redis's side and the pending changes are
  /// forgotten (connected() starts over from the wanted set). The wanted set
  /// stays.
  void disconnected();
  bool is_connected() const noexcept { return connected_; }
  /// Connected, and every channel wanted at connected() is confirmed, no
  /// longer wanted, or lost.
  bool settled() const noexcept { return connected_ && resubscribing_.empty(); }
  /// The channels settled() still waits for, in ascending order.
  std::vector<std::string> unsettled() const;

  // -- batching ---------------------------------------------------------------

  /// Connected, and some channel was changed since the last take_changes().
  bool has_changes() const noexcept { return connected_ && !dirty_.empty(); }
  /// While connected: the commands the changes need, and the channels in
  /// them move to `subscribing` / `unsubscribing`. A changed channel with a
  /// command in flight is not in them: its confirmation looks at it again.
  /// Not connected: nothing (the changes wait for connected()).
  changes take_changes();

  // -- Redis's answers --------------------------------------------------------

  /// Redis confirmed our SUBSCRIBE of `channel`. @returns true when it is
  /// wanted and was `subscribing`: report it (on_subscribed). One no longer
  /// wanted becomes a change (unsubscribe it).
  bool on_subscribed(const std::string& channel);
  /// Redis confirmed our UNSUBSCRIBE of `channel`. One wanted again becomes
  /// a change (subscribe it).
  void on_unsubscribed(const std::string& channel);
  /// Redis refused our SUBSCRIBE of `channel` (an error reply). @returns true
  /// when it was wanted: it is lost (out of the wanted set); report it.
  bool on_refused(const std::string& channel);
  /// Redis ended the subscription of `channel` without being asked (a
  /// sharded channel whose slot left the node). @returns true when it was
  /// subscribed and wanted: it is lost (out of the wanted set); report it.
  bool on_dropped(const std::string& channel);

  // -- properties -------------------------------------------------------------

  /// Redis's side of `channel` on the current connection; none when Redis
  /// has nothing of it and nothing is in flight.
  std::optional<state> server_state(const std::string& channel) const;
  /// Wanted, and Redis confirmed it on the current connection.
  bool confirmed(const std::string& channel) const;
  /// Channels Redis has confirmed on the current connection (`subscribed`),
  /// wanted or not.
  std::size_t confirmed_count() const noexcept;

private:
  /// Forgets Redis's side of `channel` if it is `s`. @returns whether it was.
  bool forget_server(const std::string& channel, state s);
  /// `channel` is no longer wanted: out of the wanted set, with nothing left
  /// to send or wait for (unwant() then marks the UNSUBSCRIBE to send).
  /// @returns whether it was wanted.
  bool lose(const std::string& channel);

  bool connected_ = false;
  std::unordered_set<std::string> wanted_;
  std::unordered_map<std::string, state> server_;
  std::set<std::string> dirty_;                  ///< changed since take_changes()
  std::unordered_set<std::string> resubscribing_; ///< what settled() waits for
};

} // namespace herald::net::redis
