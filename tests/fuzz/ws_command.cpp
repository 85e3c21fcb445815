// Fuzz target: one WebSocket text message from a client (net/wire/ws/protocol),
// then every reply the server could build from what was parsed.
#include "fuzz_check.hpp"

#include "net/wire/channel_name.hpp"
#include "net/wire/json_input.hpp"
#include "net/wire/ws/protocol.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace herald;
using namespace herald::net;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text{reinterpret_cast<const char*>(data), size};
  ws::command cmd;
  ws::command_error err;
  nlohmann::json reply;
  if (!ws::parse_command(text, cmd, err)) {
    FUZZ_CHECK(err.code != errc::none);
    // The error reply must be valid JSON whatever the client sent.
    auto out = ws::encode_error(err.id, err.code, err.message, err.channel);
    FUZZ_CHECK(parse_client_json(out, reply));
    return 0;
  }
  FUZZ_CHECK(cmd.id.is_null() || cmd.id.is_number() || cmd.id.is_string());
  if (cmd.kind != ws::op::ping)
    FUZZ_CHECK(!validate_channel(cmd.channel));
  if (cmd.since)
    FUZZ_CHECK(cmd.since->offset <= max_client_offset && is_valid_epoch(cmd.since->epoch));
  auto out = ws::encode_subscribed(cmd.id, cmd.channel, cmd.since.value_or(stream_position{"e", 0}),
                                   false, "");
  FUZZ_CHECK(parse_client_json(out, reply));
  FUZZ_CHECK(parse_client_json(ws::encode_pong(cmd.id), reply));
  return 0;
}
