// Fuzz target: the bytes a WebSocket client sends after the upgrade
// (net/wire/ws/frame_codec). Input layout: 2 bytes of message limit (little endian,
// & 0x3fff, so 1009 is easy to reach), 1 byte seeding the read splits, then the
// stream of frames. The stream is parsed whole by one parser and in random
// splits by another; both must report the same events, and every event must
// hold the parser's promises.
#include "fuzz_check.hpp"

#include "net/wire/ws/frame_codec.hpp"
#include "net/wire/ws/utf8.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

using namespace herald::net::ws;
using result = frame_parser::result;

namespace {

struct event {
  result kind;
  std::string data;
  std::uint16_t code;
  bool operator==(const event& o) const {
    return kind == o.kind && data == o.data && code == o.code;
  }
};

// Checks one event against the documented contract and returns it.
event check_event(const frame_parser& p, result r, std::size_t limit) {
  switch (r) {
  case result::text:
    FUZZ_CHECK(is_valid_utf8(p.message()));
    [[fallthrough]];
  case result::binary:
    FUZZ_CHECK(p.message().size() <= limit);
    return {r, std::string(p.message()), 0};
  case result::ping:
  case result::pong:
    FUZZ_CHECK(p.control_payload().size() <= max_control_payload_bytes);
    return {r, std::string(p.control_payload()), 0};
  case result::close:
    FUZZ_CHECK(p.close_code() == close_no_status ? p.control_payload().empty()
                                                 : is_valid_close_code(p.close_code()));
    FUZZ_CHECK(p.close_reason().size() <= max_close_reason_bytes);
    FUZZ_CHECK(is_valid_utf8(p.close_reason()));
    return {r, std::string(p.close_reason()), p.close_code()};
  case result::error:
    FUZZ_CHECK(p.error_code() == close_protocol_error || p.error_code() == close_invalid_payload ||
               p.error_code() == close_too_big);
    FUZZ_CHECK(!p.error_text().empty() && p.error_text().size() <= max_close_reason_bytes);
    return {r, std::string(p.error_text()), p.error_code()};
  case result::need_more:
    break;
  }
  FUZZ_CHECK(false);
  return {r, {}, 0};
}

// Feeds `chunks` in order, as successive socket reads, and records the events.
std::vector<event> run(frame_parser& p, const std::vector<std::string_view>& chunks,
                       std::size_t limit) {
  std::vector<event> out;
  for (std::string_view in : chunks) {
    for (;;) {
      std::size_t used = 0;
      const result r = p.parse(in, used);
      FUZZ_CHECK(used <= in.size());
      in.remove_prefix(used);
      if (r == result::need_more) {
        FUZZ_CHECK(in.empty());
        break;
      }
      out.push_back(check_event(p, r, limit));
      if (p.finished()) {
        // No event after close or error: the same result again, consuming nothing.
        FUZZ_CHECK(p.parse(in, used) == r && used == 0);
        return out;
      }
      if (r == result::text || r == result::binary) {
        // What we parsed re-encodes (server side, masked as a client would) to the same message.
        const std::string frame =
          encode_frame(r == result::text ? opcode::text : opcode::binary, p.message());
        const std::size_t len7 = static_cast<std::uint8_t>(frame[1]);
        const std::size_t header = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0);
        FUZZ_CHECK(frame.size() == header + p.message().size());
        std::string masked = frame.substr(0, header) + std::string(4, '\0') + frame.substr(header);
        masked[1] = static_cast<char>(masked[1] | 0x80); // zero key: payload unchanged
        frame_parser again{limit};
        std::size_t n = 0;
        FUZZ_CHECK(again.parse(masked, n) == r && n == masked.size());
        FUZZ_CHECK(again.message() == p.message());
      }
    }
  }
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3)
    return 0;
  const std::size_t limit = (data[0] | data[1] << 8) & 0x3fff;
  std::uint32_t rng = data[2] * 2654435761u + 1;
  std::string_view stream{reinterpret_cast<const char*>(data) + 3, size - 3};

  frame_parser whole{limit};
  const std::vector<event> expected = run(whole, {stream}, limit);

  // Random read sizes, mostly small so that headers and UTF-8 sequences split.
  std::vector<std::string_view> chunks;
  for (std::string_view rest = stream; !rest.empty();) {
    rng = rng * 1103515245u + 12345u;
    std::size_t n = (rng >> 16) % 8 == 0 ? (rng >> 8) % 512 : (rng >> 16) % 7;
    chunks.push_back(rest.substr(0, n));
    rest.remove_prefix(chunks.back().size());
  }
  frame_parser split{limit};
  FUZZ_CHECK(run(split, chunks, limit) == expected);
  return 0;
}
