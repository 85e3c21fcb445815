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
//   channel    -> connection:(subscribed_atom, subscribe_result)
//   connection -> channel:   (unsub_atom, caf::actor subscriber)
//   service    -> registry:  (publish_atom, publish_ticket_ptr)
//   registry   -> channel:   (publish_atom, publish_ticket_ptr, std::size_t index)
//   channel    -> connection:(publication_ptr)
//   channel    -> self:      (prune_atom)                     history TTL timer
//   channel    -> registry:  (idle_atom, std::string name, std::uint64_t ops_received)
//   registry   -> channel:   (stop_atom)
//   bridge     -> connection:(text_atom, std::string) | (watermark_atom, bool, std::size_t)
//                            | (closed_atom, std::uint8_t close_reason)
#pragma once

#include "actors/publication.hpp"
#include "actors/publish_ticket.hpp"
#include "net/stream_position.hpp"

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/type_id.hpp>

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
CAF_ADD_ATOM(herald, herald::actors, watermark_atom, "watermark")
CAF_ADD_ATOM(herald, herald::actors, closed_atom, "closed")

namespace herald::actors {

/// A connection asks to join a channel, optionally recovering from `since`.
struct subscribe_request {
  std::string channel;
  caf::actor subscriber;
  std::optional<net::stream_position> since;
};

/// The channel's answer, sent to the subscriber before any live publication.
struct subscribe_result {
  std::string channel;
  caf::actor channel_actor;       ///< for unsubscribe
  net::stream_position position;  ///< epoch and offset of the latest publication
  bool recovered = false;         ///< `since` given and every missed publication is in `replay`
  std::string reason;             ///< why recovery failed (empty otherwise)
  std::vector<publication_ptr> replay; ///< missed publications, in offset order
};

} // namespace herald::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::publication_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::publish_ticket_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::subscribe_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herald::actors::subscribe_result)
