// The messages actors exchange, declared once.
//
// Atoms are verbs (at most 10 characters in CAF 0.17.6). Payload types are
// local-only pointers and structs; CAF 0.17.6 refuses message types that are
// neither inspectable nor whitelisted, so they are whitelisted here. Nothing
// here crosses a process: between instances data travels as JSON.
//
// Who sends what (sender -> receiver: message):
//   connection -> registry:  (subscribe_atom, subscribe_request)
//   registry   -> channel:   (subscribe_atom, subscribe_request)
//   channel    -> session:   subscribe_result through the session's shard (net/fanout.hpp)
//   channel    -> connection:(subscribed_atom, std::string channel, std::uint64_t request,
//                             caf::actor channel_actor)    bookkeeping: whom to unsubscribe from
//   connection -> channel:   (unsub_atom, caf::actor subscriber)
//   service    -> registry:  (publish_atom, publish_ticket_ptr)
//   registry   -> channel:   (publish_atom, publish_ticket_ptr, std::size_t index)
//   channel    -> sessions:  publication_ptr, one post per I/O shard (net/fanout.hpp): no
//                            actor message per delivery
//   service    -> registry:  (history_atom, channel_query_ptr)  position and latest publications
//   registry   -> channel:   (history_atom, channel_query_ptr)  answered through its callback
//   channel    -> self:      (prune_atom)                     history TTL timer
//   channel    -> registry:  (idle_atom, std::string name, std::uint64_t ops_received)
//   registry   -> channel:   (stop_atom)
//   bridge     -> connection:(text_atom, std::string)
//                            | (subscribe_timeout_atom, std::string channel, std::uint64_t request)
//                              the session answered an overdue subscribe: forget it
//                            | (closed_atom, std::uint8_t close_reason)
// Cluster mode (docs/cluster.md):
//   service    -> gateway:   (publish_atom, publish_ticket_ptr)
//   channel    -> gateway:   (watch_atom, std::string, caf::actor) | (unwatch_atom, std::string)
//                            | (sync_atom, std::string, std::uint64_t after,
//                               std::string epoch, std::uint64_t delivered, caf::actor)
//   channel    -> gateway:   (history_atom, channel_query_ptr) a channel that does not
//                            mirror Redis (no local subscriber): answered from Redis
//   gateway    -> channel:   (watching_atom) | (remote_atom, publication_ptr)
//                            | (synced_atom, sync_result)
//   backend    -> gateway:   (remote_atom, publication_ptr) decoded on the backend's
//                            thread (an envelope whose channel is not the one it came on
//                            is dropped there)
//                            | (watching_atom, std::string) | (redis_up_atom)
//                            | (redis_down_atom, std::string reason)
//                            | (writable_atom, bool, std::string reason) a write's outcome
//   gateway    -> self:      (write_probe_atom)  while Redis refuses writes, every second
// Authentication (docs/auth.md):
//   connection -> self:      (auth_wait_atom) | (expiring_atom, std::uint64_t generation)
//                            | (expire_atom, std::uint64_t generation)
#pragma once

#include "actors/publication.hpp"
#include "actors/publish_ticket.hpp"
#include "net/fanout.hpp"
#include "net/wire/stream_position.hpp"
#include "net/wire/tags_filter.hpp"

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/type_id.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

CAF_ADD_ATOM(herald, herald::actors, subscribe_atom, "subscribe")
CAF_ADD_ATOM(herald, herald::actors, subscribed_atom, "subscribed")
CAF_ADD_ATOM(herald, herald::actors, unsub_atom, "unsub")
CAF_ADD_ATOM(herald, herald::actors, publish_atom, "publish")
CAF_ADD_ATOM(herald, herald::actors, prune_atom, "prune")
CAF_ADD_ATOM(herald, herald::actors, idle_atom, "idle")
CAF_ADD_ATOM(herald, herald::actors, stop_atom, "stop")
CAF_ADD_ATOM(herald, herald::actors, text_atom, "text")
CAF_ADD_ATOM(herald, herald::actors, closed_atom, "closed")
CAF_ADD_ATOM(herald, herald::actors, watch_atom, "watch")
CAF_ADD_ATOM(herald, herald::actors, unwatch_atom, "unwatch")
CAF_ADD_ATOM(herald, herald::actors, watching_atom, "watching")
CAF_ADD_ATOM(herald, herald::actors, remote_atom, "remote")
CAF_ADD_ATOM(herald, herald::actors, sync_atom, "sync")
CAF_ADD_ATOM(herald, herald::actors, synced_atom, "synced")
CAF_ADD_ATOM(herald, herald::actors, redis_up_atom, "redisup")
CAF_ADD_ATOM(herald, herald::actors, redis_down_atom, "redisdown")
CAF_ADD_ATOM(herald, herald::actors, writable_atom, "writable")
CAF_ADD_ATOM(herald, herald::actors, write_probe_atom, "wprobe")
// Authentication timers of a connection (actors/connection_auth).
CAF_ADD_ATOM(herald, herald::actors, auth_wait_atom, "authwait")
CAF_ADD_ATOM(herald, herald::actors, subscribe_timeout_atom, "subtimeout")
CAF_ADD_ATOM(herald, herald::actors, expiring_atom, "expiring")
CAF_ADD_ATOM(herald, herald::actors, expire_atom, "expire")
// Channel position and history queries (GET /v1/channels/{name}, /api/history).
CAF_ADD_ATOM(herald, herald::actors, history_atom, "history")

namespace herald::actors {

/// A connection asks to join a channel, optionally recovering from `since`.
struct subscribe_request {
  std::string channel;
  caf::actor subscriber;
  std::optional<net::stream_position> since;
  /// The subscriber's number for this request, echoed in the answer, so an
  /// answer to a subscribe the client cancelled is never taken for a later one.
  std::uint64_t request = 0;
  /// The session publications go to (and the answer, through its shard).
  std::shared_ptr<net::delivery_sink> sink;
  /// When `since` names an epoch the channel no longer has (epoch_changed),
  /// the answer's replay holds what the channel retains of its current epoch
  /// (recovered stays false). The Centrifugo dialect asks for it: its live
  /// epoch_changed gap makes the SDK subscribe again, and that reply is the
  /// only place the new epoch's first publications can reach it.
  bool epoch_history = false;
  /// The subscriber negotiated delta compression: from then on the channel
  /// makes a Fossil delta of each publication against the one before
  /// (publication::delta, channel_state::deltas).
  bool delta = false;
  /// The subscription's filter (net/wire/tags_filter.hpp; null: none). On a
  /// class with recovery=cache the cached publication is the newest one it
  /// matches (docs/protocol.md "Cache recovery"); everything else it is
  /// applied to by the session.
  net::tags_filter_ptr filter{};
};

/// The channel's answer, handed to the subscriber's session before any live
/// publication (net/fanout.hpp).
using subscribe_result = net::subscription_answer;

/// A question to one channel: its position `{epoch, offset}` and at most
/// `limit` of its latest publications (oldest first). `done` is called once,
/// on the channel's CAF worker: `ok` false when the channel cannot answer
/// here (cluster mode without a local mirror of the channel).
struct channel_query {
  using done_fn = std::function<void(bool ok, net::stream_position position,
                                     std::vector<publication_ptr> latest)>;
  std::string channel;
  std::size_t limit = 0;
  done_fn done;
};
using channel_query_ptr = std::shared_ptr<channel_query>;

/// A channel's state in Redis: its epoch, head offset and the history after
/// the offset the channel asked for (cluster mode).
struct sync_result {
  bool ok = false;
  std::string error;
  std::string epoch;
  std::uint64_t head = 0;
  std::vector<publication_ptr> entries;
};

} // namespace herald::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::sync_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::channel_query_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::publication_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::publish_ticket_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::subscribe_request)
