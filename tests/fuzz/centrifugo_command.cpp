// Fuzz target: one WebSocket text message from a Centrifugo client
// (net/wire/centrifugo/protocol: '\n'-separated commands), then every reply the
// server could build from what was parsed, and the close a refusal becomes.
#include "fuzz_check.hpp"

#include "net/wire/centrifugo/protocol.hpp"
#include "net/wire/json_input.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace herald::net;
namespace cf = herald::net::centrifugo;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text{reinterpret_cast<const char*>(data), size};
  nlohmann::json reply;
  for (const auto& line : cf::parse_commands(text)) {
    if (!line.ok) {
      FUZZ_CHECK(line.err.code == cf::error_code::bad_request);
      FUZZ_CHECK(!line.err.message.empty());
      FUZZ_CHECK(
        parse_client_json(cf::encode_error(line.err.id, line.err.code, line.err.message), reply));
      auto [code, reason] = cf::close_for(1008, line.err.message);
      FUZZ_CHECK(code == 3501);
      continue;
    }
    const auto& cmd = line.cmd;
    FUZZ_CHECK(cmd.id != 0 || cmd.kind == cf::method::pong);
    if (cmd.kind == cf::method::subscribe) {
      FUZZ_CHECK(cmd.since.offset <= max_client_offset);
      FUZZ_CHECK(
        parse_client_json(cf::encode_subscribe(cmd.id, cmd.since, cmd.recover, false, {}), reply));
    }
    if (cmd.kind == cf::method::unsupported)
      FUZZ_CHECK(parse_client_json(cf::encode_error(cmd.id, cf::error_code::method_not_found,
                                                    "no \"" + cmd.unsupported + "\""),
                                   reply));
    FUZZ_CHECK(parse_client_json(cf::encode_unsubscribe_push(cmd.channel, 2500, "gap"), reply));
  }
  return 0;
}
