// A stream position: where a subscriber is in one channel's history.
#pragma once

#include <cstdint>
#include <string>

namespace herald::net {

/// `{epoch, offset}`: the offset of the last publication a client has, in the
/// history generation named by `epoch` (Centrifugo's terms). Offsets start at
/// 1; offset 0 means "before the first publication".
struct stream_position {
  std::string epoch;
  std::uint64_t offset = 0;
};

/// Largest offset accepted from a client (2^53 - 1, exact in a JS number).
inline constexpr std::uint64_t max_client_offset = 9007199254740991ULL;

/// An epoch sent by a client: 1-32 characters of [a-z0-9].
bool is_valid_epoch(const std::string& epoch) noexcept;

} // namespace herald::net
