// slot: which Redis Cluster hash slot a key or shard channel belongs to.
//
// Pure code (no I/O). Follows the Redis Cluster specification, "Key
// distribution model" and "Hash tags": slot = CRC16(key) mod 16384, where
// CRC16 is the XMODEM variant (polynomial 0x1021, initial value 0, no
// reflection), and when the key holds a `{` followed later by a `}` with at
// least one byte between them, only the bytes between the first `{` and the
// first `}` after it are hashed. Tested against Redis's own CLUSTER KEYSLOT
// (tests/redis/slot.cpp).
#pragma once

#include <cstdint>
#include <string_view>

namespace herald::net::redis {

/// Number of hash slots in a Redis Cluster.
inline constexpr std::uint16_t slot_count = 16384;

/// CRC16/XMODEM of `bytes` (binary-safe). crc16("123456789") is 0x31C3.
std::uint16_t crc16(std::string_view bytes) noexcept;

/// The part of `key` that is hashed: the hash tag when there is a non-empty
/// one, else the whole key.
std::string_view hash_tag(std::string_view key) noexcept;

/// The hash slot of `key` (0-16383), as CLUSTER KEYSLOT answers it.
std::uint16_t key_slot(std::string_view key) noexcept;

} // namespace herald::net::redis
