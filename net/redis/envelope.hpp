// The Redis side of cluster mode, as pure code: key names, the Lua scripts
// that publish and sync a channel, and the publication envelope every
// instance (and any non-Herald publisher) exchanges through Redis.
// docs/cluster.md is the contract; this file implements it.
#pragma once

#include "net/wire/tags.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace herald::net::redis {

/// Redis names for one Herald channel under a prefix (default "herald:").
/// The channel name must already be valid (net/wire/channel_name.hpp): it then
/// holds only [A-Za-z0-9_.:-], so it cannot reach outside its key. Every
/// name starts with `<prefix>{<channel>}`: the braces are a Redis Cluster
/// hash tag (Redis Cluster specification, "Hash tags"), so all the names of
/// one channel map to one slot and the publish and sync scripts run on one
/// node. The prefix holds no braces (app/config.cpp checks), so the first
/// `{...}` of every name is the channel's.
struct channel_keys {
  std::string meta;    ///< hash {epoch, offset}: `<prefix>{<channel>}:meta`
  std::string history; ///< stream of envelopes, id `<offset>-0`: `<prefix>{<channel>}:history`
  std::string pubsub;  ///< pub/sub channel: `<prefix>{<channel>}:pub`
};

/// Key names for `channel` under `prefix` (docs/cluster.md, "Redis names").
channel_keys keys_for(std::string_view prefix, std::string_view channel);

/// The key that remembers a publisher's idempotency key `key` on `channel`
/// (issue #14): `<prefix>{<channel>}:idem:<key>`, in the channel's slot.
std::string idempotency_key_for(std::string_view prefix, std::string_view channel,
                                std::string_view key);

/// The channel name a pub/sub channel name stands for, or empty when
/// `pubsub` is not `<prefix>{<channel>}:pub` with a non-empty channel.
std::string channel_of_pubsub(std::string_view prefix, std::string_view pubsub);

/// Lua (net/redis/publish.lua): append one publication to a channel's
/// history and publish it, in one atomic step. KEYS: meta, history. ARGV: pubsub channel, channel
/// name, event, data (JSON text), history size, history ttl (seconds),
/// epoch to start when the channel has none, idempotency window (seconds),
/// 'PUBLISH' or 'SPUBLISH', tags (JSON object text or ''). Returns {epoch, offset}.
extern const std::string publish_script;

/// Lua (net/redis/sync.lua): the channel's epoch and head offset (starting
/// an epoch if there is none), and every history entry after an offset. KEYS: meta, history.
/// ARGV: epoch to start, offset to read after, history ttl (seconds).
/// Returns {epoch, offset, [[id, ["p", envelope]], ...]}.
extern const std::string sync_script;

/// A publication as it travels through Redis:
/// `{"channel":"stream:42","epoch":"...","offset":17,"event":"withdrawn","data":<JSON>}`,
/// with `"tags":{"k":"v",...}` after `data` when the publication has tags
/// besides its event (ARGV[10] of the publish script).
struct envelope {
  std::string channel;
  std::string epoch;
  std::uint64_t offset = 0;
  std::string event;
  std::string data; ///< compact JSON text
  net::publication_tags tags; ///< besides the event (net/wire/tags.hpp)
};

/// Parses and validates an envelope (channel name, epoch, offset >= 1,
/// event name, data present, `tags` absent or an object of strings within
/// net/wire/tags.hpp's bounds and without `event`). Never throws.
/// @returns false with a reason in `error` when anything is wrong.
bool parse_envelope(std::string_view text, envelope& out, std::string& error);

} // namespace herald::net::redis
