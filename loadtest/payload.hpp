// What the load generator puts in each publication, and the fast scanners
// that find it again in what subscribers receive (an SSE data line, a
// WebSocket publication frame, or the baseline server's echoed body).
//
// Publication data: {"seq":N,"t":<CLOCK_MONOTONIC ns at send>,"c":[ids],"pad":"xx.."}
// `c` lists the load generator's channel ids the publication went to (see
// channel_plan), so a subscriber on several channels can attribute it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace herald::loadtest {

/// Fields recovered from a publication's data.
struct pub_fields {
  std::uint64_t seq = 0;           ///< publication sequence number (global, from 1)
  std::uint64_t t_ns = 0;          ///< send time, CLOCK_MONOTONIC nanoseconds
  std::array<std::int32_t, 8> c{}; ///< channel ids (first 8)
  std::size_t n_c = 0;             ///< number of ids in c

  /// True iff channel id `id` is listed in c.
  bool lists(std::int32_t id) const noexcept;
};

/// Builds the data JSON for publication `seq` sent at `t_ns` to the channel
/// ids `channels`, padded with 'x' so the JSON is about `payload_bytes` long
/// (never shorter than the fields themselves).
std::string make_data(std::uint64_t seq, std::uint64_t t_ns, const std::vector<int>& channels,
                      std::size_t payload_bytes);

/// Finds "seq", "t" and "c" anywhere in `text` (key order and surrounding
/// JSON do not matter). True iff seq and t were found.
bool scan_pub_fields(std::string_view text, pub_fields& out) noexcept;

/// Fast path for Herald's WebSocket publication frame
/// {"op":"publication","channel":"..","offset":N,...}: sets channel and
/// offset. False when the message does not start that way (use a JSON
/// parser then).
/// Finds the channel and offset of a Centrifugo publication push
/// `{"push":{"channel":"..","pub":{"data":..,"offset":N,"tags":{..}}}}` (the
/// offset is the last `"offset":` of the message: it follows the data).
/// @returns false for any other message.
bool scan_centrifugo_publication(std::string_view msg, std::string_view& channel,
                                 std::uint64_t& offset) noexcept;

bool scan_ws_publication(std::string_view msg, std::string_view& channel,
                         std::uint64_t& offset) noexcept;

/// Parses a decimal unsigned integer at the start of `s`; false if none.
bool parse_u64(std::string_view s, std::uint64_t& out) noexcept;

/// One entry of an SSE cursor: `<hash 8 hex>-<epoch>-<offset>`.
struct cursor_entry {
  std::uint32_t hash = 0;
  std::string_view epoch;
  std::uint64_t offset = 0;
};

/// Parses an SSE cursor (entries joined by '_'), calling `f(const
/// cursor_entry&)` for each entry. Returns false (after calling f for the
/// entries before it) at the first malformed entry.
template <class F>
bool for_each_cursor_entry(std::string_view cursor, F&& f);

/// Parses one cursor entry; false when malformed.
bool parse_cursor_entry(std::string_view text, cursor_entry& out) noexcept;

template <class F>
bool for_each_cursor_entry(std::string_view cursor, F&& f) {
  if (cursor.empty())
    return false;
  while (true) {
    auto sep = cursor.find('_');
    cursor_entry e;
    if (!parse_cursor_entry(cursor.substr(0, sep), e))
      return false;
    f(e);
    if (sep == std::string_view::npos)
      return true;
    cursor.remove_prefix(sep + 1);
  }
}

} // namespace herald::loadtest
