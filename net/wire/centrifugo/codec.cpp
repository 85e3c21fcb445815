#include "net/wire/centrifugo/codec.hpp"

#include "net/wire/centrifugo/protobuf.hpp"
#include "net/wire/ws/frame_codec.hpp"

namespace herald::net::centrifugo {

namespace {

bool blank(std::string_view line) {
  return line.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

class json_codec_impl final : public codec {
public:
  bool binary() const noexcept override { return false; }

  std::vector<std::size_t> command_ends(std::string_view message) const override {
    std::vector<std::size_t> ends;
    for (std::size_t pos = 0; pos < message.size();) {
      auto nl = message.find('\n', pos);
      auto end = nl == std::string_view::npos ? message.size() : nl + 1;
      if (!blank(message.substr(pos, end - pos)))
        ends.push_back(end);
      pos = end;
    }
    return ends;
  }

  std::vector<parsed> parse_commands(std::string_view message) const override {
    return centrifugo::parse_commands(message);
  }

  std::string encode_error(std::uint32_t id, error_code code, std::string_view message,
                           bool temporary) const override {
    return centrifugo::encode_error(id, code, message, temporary);
  }
  std::string encode_connect(std::uint32_t id, std::string_view client, std::string_view version,
                             std::uint32_t ping_seconds,
                             std::uint32_t ttl_seconds) const override {
    return centrifugo::encode_connect(id, client, version, ping_seconds, ttl_seconds);
  }
  std::string encode_refresh(std::uint32_t id, std::string_view client, std::string_view version,
                             std::uint32_t ttl_seconds) const override {
    return centrifugo::encode_refresh(id, client, version, ttl_seconds);
  }
  std::string encode_subscribe(std::uint32_t id, const stream_position& position,
                               bool was_recovering, bool recovered,
                               const std::vector<const publication*>& replay,
                               bool delta) const override {
    return centrifugo::encode_subscribe(id, position, was_recovering, recovered, replay, delta);
  }
  std::string encode_unsubscribe(std::uint32_t id) const override {
    return centrifugo::encode_unsubscribe(id);
  }
  std::string encode_ping(std::uint32_t id) const override { return centrifugo::encode_ping(id); }
  std::string encode_unsubscribe_push(std::string_view channel, std::uint32_t code,
                                      std::string_view reason) const override {
    return centrifugo::encode_unsubscribe_push(channel, code, reason);
  }
  const frame& ping_frame() const override {
    static const frame ping = make_frame(ws::encode_frame(ws::opcode::text, ping_message));
    return ping;
  }
  publication_bytes publication_push(const publication& p) const override {
    return centrifugo::publication_push_bytes(p);
  }
  publication_bytes delta_push(const publication& p, bool as_delta) const override {
    return centrifugo::delta_push_bytes(p, as_delta);
  }
};

} // namespace

const codec& json_codec() noexcept {
  static const json_codec_impl c;
  return c;
}

const codec* codec_for(ws::dialect d) noexcept {
  switch (d) {
  case ws::dialect::centrifugo:
    return &json_codec();
  case ws::dialect::centrifugo_protobuf:
    return &protobuf_codec();
  case ws::dialect::herald:
    break;
  }
  return nullptr;
}

} // namespace herald::net::centrifugo
