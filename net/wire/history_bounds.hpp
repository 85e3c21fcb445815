// history_bounds: the default bounds of a channel's history and of a
// publisher's idempotency key (--history-size, --history-ttl,
// --idempotency-window). Written once here because both modes use them: the
// in-process channel (actors::history_options) and the Redis scripts
// (net/redis/script_reply.hpp script_settings, net/redis/client.hpp);
// app/config.cpp's option table takes its defaults from those structs.
#pragma once

#include <chrono>
#include <cstddef>

namespace herald::net::history_bounds {

/// Publications kept per channel (>= 1).
inline constexpr std::size_t size = 256;
/// Age after which a channel's history expires (seconds after its last publication).
inline constexpr std::chrono::seconds ttl{300};
/// How long a publisher's Idempotency-Key is remembered.
inline constexpr std::chrono::seconds idempotency_window{300};

} // namespace herald::net::history_bounds
