// Fuzz target: an SSE cursor as a client sends it back (Last-Event-ID
// header or ?last_event_id=). What parses must encode back to a cursor that
// parses to the same entries.
#include "fuzz_check.hpp"

#include "net/wire/sse/cursor.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

using namespace herald::net;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text{reinterpret_cast<const char*>(data), size};
  std::vector<sse::cursor_entry> entries;
  if (!sse::parse_cursor(text, 64, entries))
    return 0;
  FUZZ_CHECK(!entries.empty() && entries.size() <= 64);
  FUZZ_CHECK(text.size() <= sse::max_cursor_bytes);
  auto again = sse::encode_cursor(entries);
  std::vector<sse::cursor_entry> round;
  FUZZ_CHECK(sse::parse_cursor(again, 64, round));
  FUZZ_CHECK(round.size() == entries.size());
  for (std::size_t i = 0; i < round.size(); ++i) {
    FUZZ_CHECK(round[i].channel_hash == entries[i].channel_hash);
    FUZZ_CHECK(round[i].position.epoch == entries[i].position.epoch);
    FUZZ_CHECK(round[i].position.offset == entries[i].position.offset);
  }
  return 0;
}
