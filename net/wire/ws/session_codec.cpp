#include "net/wire/ws/session_codec.hpp"

#include "net/wire/centrifugo/codec.hpp"
#include "net/wire/ws/frame_codec.hpp"
#include "net/wire/ws/protocol.hpp"

#include <functional>
#include <mutex>

namespace herald::net::ws {

namespace {

// Herald's /v1/ws (docs/protocol.md): one JSON command per text message.
class herald_codec final : public session_codec {
public:
  bool binary() const noexcept override { return false; }
  std::vector<std::size_t> command_ends(std::string_view message) const override {
    return {message.size()}; // one command per message, an empty one too
  }
  std::vector<nlohmann::json> command_ids(std::string_view rest) const override {
    return {nlohmann::json{}};
  }
  std::string rate_limited(const nlohmann::json& id, std::string_view why) const override {
    return encode_error(id, errc::rate_limited, why);
  }
  publication_bytes publication_message(const publication& p) const override {
    return {p.ws_header, p.ws};
  }
  publication_bytes delta_message(const publication& p, bool as_delta) const override {
    auto build = [&p](bool d, frame& body, std::string& header) {
      body = make_frame(encode_delta_publication(p.channel, p.offset, p.event, d ? p.delta : p.data, d, p.tags));
      char h[max_server_header_bytes];
      header.assign(h, encode_header(opcode::text, body->size(), h));
    };
    if (as_delta) {
      std::call_once(p.ws_delta_once, build, true, std::ref(p.ws_delta), std::ref(p.ws_delta_header));
      return {p.ws_delta_header, p.ws_delta};
    }
    std::call_once(p.ws_full_once, build, false, std::ref(p.ws_full), std::ref(p.ws_full_header));
    return {p.ws_full_header, p.ws_full};
  }
  bool supports_delta() const noexcept override { return true; }
  const frame* ping_frame() const noexcept override { return nullptr; }
  std::pair<std::uint16_t, std::string> close(std::uint16_t code,
                                              std::string_view reason) const override {
    return {code, std::string{reason}};
  }
  std::string pending_error(const nlohmann::json& id, std::string_view channel, errc code,
                            std::string_view why) const override {
    return encode_error(id, code, why, channel);
  }
  std::string unsubscribed(const nlohmann::json& id, std::string_view channel) const override {
    return encode_unsubscribed(id, channel);
  }
  std::string gap(std::string_view channel, std::string_view reason) const override {
    return encode_gap(channel, reason);
  }
  bool gap_ends_subscription() const noexcept override { return false; }
  bool replay_in_reply() const noexcept override { return false; }
  std::string subscribed(const nlohmann::json& id, std::string_view channel,
                         const stream_position& position, bool recovering, bool recovered,
                         std::string_view reason, const std::vector<const publication*>&,
                         bool delta = false, bool cached = false,
                         bool conflated = false) const override {
    return encode_subscribed(id, channel, position, recovering && recovered, reason, delta,
                             cached, conflated);
  }
  std::string refresh_required(std::int64_t expires_at) const override {
    return encode_refresh_required(expires_at);
  }
  std::string revoked(std::string_view channel, std::string_view why) const override {
    return encode_error(nullptr, errc::forbidden, why, channel);
  }
  std::string unrecoverable(const nlohmann::json& id, std::string_view reason) const override {
    // Not asked for on /v1/ws (no flag): a failed recovery is `recovered:false`.
    return encode_error(id, errc::invalid_since, reason);
  }
};

// Centrifugo's client protocol in one of its encodings (net/wire/centrifugo/codec.hpp).
class centrifugo_session_codec final : public session_codec {
public:
  explicit centrifugo_session_codec(const centrifugo::codec& c) : c_(c) {}

  bool binary() const noexcept override { return c_.binary(); }
  std::vector<std::size_t> command_ends(std::string_view message) const override {
    return c_.command_ends(message);
  }
  std::vector<nlohmann::json> command_ids(std::string_view rest) const override {
    std::vector<nlohmann::json> ids;
    for (const auto& line : c_.parse_commands(rest))
      ids.emplace_back(line.ok ? line.cmd.id : line.err.id); // 0: none readable
    return ids;
  }
  std::string rate_limited(const nlohmann::json& id, std::string_view why) const override {
    return c_.encode_error(id_of(id), centrifugo::error_code::too_many_requests, why);
  }
  publication_bytes publication_message(const publication& p) const override {
    return c_.publication_push(p);
  }
  publication_bytes delta_message(const publication& p, bool as_delta) const override {
    return c_.delta_push(p, as_delta);
  }
  bool supports_delta() const noexcept override { return true; }
  const frame* ping_frame() const noexcept override { return &c_.ping_frame(); }
  std::pair<std::uint16_t, std::string> close(std::uint16_t code,
                                              std::string_view reason) const override {
    return centrifugo::close_for(code, reason);
  }
  std::string pending_error(const nlohmann::json& id, std::string_view, errc code,
                            std::string_view why) const override {
    const bool retry = code == errc::unavailable;
    return c_.encode_error(id_of(id),
                           retry ? centrifugo::error_code::internal
                                 : centrifugo::error_code::bad_request,
                           why, retry);
  }
  std::string unsubscribed(const nlohmann::json& id, std::string_view) const override {
    return c_.encode_unsubscribe(id_of(id));
  }
  std::string gap(std::string_view channel, std::string_view reason) const override {
    // The SDK answers a code >= 2500 by subscribing again from its last
    // position (and recovers).
    return c_.encode_unsubscribe_push(channel, centrifugo::gap_unsubscribe_code, reason);
  }
  bool gap_ends_subscription() const noexcept override { return true; }
  bool replay_in_reply() const noexcept override { return true; }
  std::string subscribed(const nlohmann::json& id, std::string_view,
                         const stream_position& position, bool recovering, bool recovered,
                         std::string_view, const std::vector<const publication*>& replay,
                         bool delta = false, bool = false, bool = false) const override {
    return c_.encode_subscribe(id_of(id), position, recovering, recovering && recovered, replay,
                               delta);
  }
  std::string refresh_required(std::int64_t) const override {
    return {}; // the SDK refreshes after the `ttl` of its connect reply
  }
  std::string revoked(std::string_view channel, std::string_view why) const override {
    return c_.encode_unsubscribe_push(channel, 2000, why);
  }
  std::string unrecoverable(const nlohmann::json& id, std::string_view reason) const override {
    return c_.encode_error(id_of(id), centrifugo::error_code::unrecoverable_position,
                           reason.empty() ? std::string_view{"unrecoverable position"} : reason);
  }

private:
  // A Centrifugo command id as the connection actor put it in the entry
  // (a JSON number); 0 when it is none.
  static std::uint32_t id_of(const nlohmann::json& id) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() > 0xffffffffLL)
      return 0;
    return static_cast<std::uint32_t>(id.get<std::int64_t>());
  }

  const centrifugo::codec& c_;
};

} // namespace

const session_codec& session_codec_for(dialect d) noexcept {
  static const herald_codec herald;
  static const centrifugo_session_codec cf_json{centrifugo::json_codec()};
  static const centrifugo_session_codec cf_protobuf{centrifugo::protobuf_codec()};
  switch (d) {
  case dialect::centrifugo:
    return cf_json;
  case dialect::centrifugo_protobuf:
    return cf_protobuf;
  case dialect::herald:
    break;
  }
  return herald;
}

} // namespace herald::net::ws
