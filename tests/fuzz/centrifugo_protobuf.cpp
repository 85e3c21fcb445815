// Fuzz target: one binary WebSocket message from a Centrifugo Protobuf client
// (net/wire/centrifugo/protobuf: varint-length-delimited Commands), the
// command boundaries the rate limit counts, and every reply the server could
// build from what was parsed, decoded back by the same codec's framing.
#include "fuzz_check.hpp"

#include "net/wire/centrifugo/codec.hpp"
#include "net/wire/centrifugo/protobuf.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace herald::net;
namespace cf = herald::net::centrifugo;

namespace {
// A reply is exactly one delimited record.
bool one_record(const std::string& reply) {
  auto ends = cf::protobuf::command_ends(reply);
  return ends.size() == 1 && ends[0] == reply.size();
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view message{reinterpret_cast<const char*>(data), size};
  const auto& codec = cf::protobuf_codec();
  auto ends = codec.command_ends(message);
  auto cmds = codec.parse_commands(message);
  FUZZ_CHECK(cmds.size() <= ends.size());
  std::size_t last = 0;
  for (auto end : ends) {
    FUZZ_CHECK(end > last && end <= message.size());
    last = end;
  }
  FUZZ_CHECK(ends.empty() || ends.back() == message.size());
  for (std::size_t i = 0; i < cmds.size(); ++i) {
    const auto& c = cmds[i];
    if (!c.ok) {
      FUZZ_CHECK(c.err.code == cf::error_code::bad_request);
      FUZZ_CHECK(!c.err.message.empty());
      FUZZ_CHECK(one_record(codec.encode_error(c.err.id, c.err.code, c.err.message)));
      if (c.err.id == 0)
        FUZZ_CHECK(i + 1 == cmds.size()); // nothing is read past a broken command
      continue;
    }
    const auto& cmd = c.cmd;
    FUZZ_CHECK(cmd.id != 0 || cmd.kind == cf::method::pong);
    if (cmd.kind == cf::method::subscribe) {
      FUZZ_CHECK(cmd.since.offset <= max_client_offset);
      FUZZ_CHECK(cmd.since.epoch.size() <= 64);
      FUZZ_CHECK(one_record(codec.encode_subscribe(cmd.id, cmd.since, cmd.recover, false, {})));
    }
    if (cmd.kind == cf::method::unsupported)
      FUZZ_CHECK(one_record(codec.encode_error(cmd.id, cf::error_code::method_not_found,
                                               "no \"" + cmd.unsupported + "\"")));
    FUZZ_CHECK(one_record(codec.encode_unsubscribe_push(cmd.channel, 2500, "gap")));
    FUZZ_CHECK(one_record(codec.encode_connect(cmd.id, cmd.token, "v", 25, 60)));
  }
  return 0;
}
