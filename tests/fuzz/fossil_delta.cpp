// Fuzz target: Fossil deltas (net/wire/fossil_delta). Input layout: 2 bytes
// of source length (little endian, clamped to what follows), the source, then
// the rest, used twice:
//  - as a delta from a client or a peer: apply() must refuse it or return a
//    target within the limit, which create() then encodes again exactly;
//  - as a target: create(source, rest) must apply back to it, no longer than
//    it plus the fixed overhead, UTF-8 when it is, and refused when cut short
//    or when the limit is one byte less.
#include "fuzz_check.hpp"

#include "net/wire/fossil_delta.hpp"
#include "net/wire/ws/utf8.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

using namespace herald::net;

namespace {

// Largest target the fuzzed deltas may announce (bytes): big enough for any
// copy of a 16 KiB input, small enough to keep each run fast.
constexpr std::size_t max_target_bytes = 1 << 16;

// What create() adds to the target's own bytes at most: the header (6 digits
// and '\n'), one insert's header (6 digits and ':') and the checksum
// (6 digits and ';'). Each copy is shorter than the bytes it stands for,
// together with the insert header before it.
constexpr std::size_t max_overhead_bytes = 21;

void check_round_trip(std::string_view source, std::string_view target) {
  const std::string delta = fossil::create(source, target);
  FUZZ_CHECK(delta.size() <= target.size() + max_overhead_bytes);
  auto r = fossil::apply(source, delta, target.size());
  FUZZ_CHECK(r && r.error == fossil::apply_error::none);
  FUZZ_CHECK(*r.target == target);
  FUZZ_CHECK(
    !fossil::apply(source, std::string_view(delta).substr(0, delta.size() - 1), target.size()));
  if (!target.empty()) {
    auto small = fossil::apply(source, delta, target.size() - 1);
    FUZZ_CHECK(!small && small.error == fossil::apply_error::target_too_large);
  }
  if (ws::is_valid_utf8(target))
    FUZZ_CHECK(ws::is_valid_utf8(delta));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2)
    return 0;
  std::string_view input{reinterpret_cast<const char*>(data) + 2, size - 2};
  std::size_t split = static_cast<std::size_t>(data[0]) | static_cast<std::size_t>(data[1]) << 8;
  if (split > input.size())
    split = input.size();
  const std::string_view source = input.substr(0, split);
  const std::string_view rest = input.substr(split);

  auto applied = fossil::apply(source, rest, max_target_bytes);
  if (applied) {
    FUZZ_CHECK(applied.error == fossil::apply_error::none);
    FUZZ_CHECK(applied.target->size() <= max_target_bytes);
    check_round_trip(source, *applied.target);
  } else {
    FUZZ_CHECK(applied.error != fossil::apply_error::none);
    FUZZ_CHECK(applied.error_at <= rest.size());
    FUZZ_CHECK(!fossil::describe(applied.error).empty());
  }

  check_round_trip(source, rest);
  return 0;
}
