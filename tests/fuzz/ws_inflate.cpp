// Fuzz target: permessage-deflate's inflate (net/ws/deflate.hpp), as
// ws_session runs it on a client's compressed message (RFC 7692 section
// 7.2.2): whatever the bytes, it answers ok, too_big or corrupt, never makes
// more than the bound, and what it accepts round-trips through our deflate.
// The first two input bytes choose the bound (0-65535 bytes); the rest is the
// compressed message.
#include "fuzz_check.hpp"

#include "net/ws/deflate.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

using namespace herald::net::ws;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2)
    return 0;
  const std::size_t bound = static_cast<std::size_t>(data[0]) << 8 | data[1];
  const std::string_view compressed{reinterpret_cast<const char*>(data) + 2, size - 2};
  std::string out;
  const auto st = inflate_message(compressed, bound, out);
  FUZZ_CHECK(st == inflate_status::ok || st == inflate_status::too_big ||
             st == inflate_status::corrupt);
  FUZZ_CHECK(out.size() <= bound);
  if (st == inflate_status::ok) {
    // What was accepted, compressed by Herald, inflates back to itself.
    std::string again;
    FUZZ_CHECK(inflate_message(deflate_message(out), out.size(), again) == inflate_status::ok);
    FUZZ_CHECK(again == out);
  }
  // The raw bytes as a message of Herald's: compressed and inflated back.
  std::string back;
  FUZZ_CHECK(inflate_message(deflate_message(compressed), compressed.size(), back) ==
             inflate_status::ok);
  FUZZ_CHECK(back == compressed);
  return 0;
}
