// channel_registry: finds channel actors by name.
//
// One per actor system, spawned by app/server. Spawns a channel actor
// (monitored) on the first subscribe or publish naming it, forwards every
// subscribe and publish to it, and stops it when the channel reports itself
// idle (no subscribers, history expired) and no forwarded message is still
// on its way to it. Counting forwarded messages is what makes that safe: a
// channel that is told to stop has seen everything the registry sent it.
// Runs on CAF's scheduler; ends on an exit message, which it passes on to
// every channel.
#pragma once

#include "actors/channel_actor.hpp"
#include "actors/messages.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <functional>
#include <string>
#include <unordered_map>

namespace herald::actors {

struct registry_state {
  struct entry {
    caf::actor channel;
    std::uint64_t forwarded = 0;
  };
  std::unordered_map<std::string, entry> channels;
  std::unordered_map<caf::actor_addr, std::string> names; ///< live channel actors, until down
  history_options history;
  std::function<std::string()> make_epoch;
  caf::actor gateway; ///< cluster mode: handed to every channel; null otherwise
  /// The channel classes (--channel-classes); never null (without them,
  /// only the default class of `history`).
  std::shared_ptr<const net::channel_classes> classes;
};

using registry_pointer = caf::stateful_actor<registry_state>*;

/// Makes a random epoch: 12 characters of [a-z0-9].
std::string random_epoch();

/// Behavior of the channel registry.
/// @param make_epoch gives each new channel actor its epoch (tests pass a
///        deterministic one; the server passes random_epoch).
/// @param gateway the Redis gateway in cluster mode, null otherwise.
/// @param classes the channel classes; each new channel actor gets its
///        class's settings (history bounds, recovery mode, overflow policy,
///        delta). Null: every channel in the default class of `history`.
caf::behavior channel_registry(registry_pointer self, history_options history,
                               std::function<std::string()> make_epoch, caf::actor gateway,
                               std::shared_ptr<const net::channel_classes> classes);

} // namespace herald::actors
