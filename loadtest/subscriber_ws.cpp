// The subscriber's WebSocket side: every message after the upgrade, for
// Herald's protocol (transport::ws, /v1/ws, docs/protocol.md) and, for the
// frames the two share (publication scanning, ping, close), Centrifugo's.
// Herald's side here: one `subscribe` per channel (with `since` when
// resuming), and the `subscribed`, `gap` and `error` answers. Centrifugo's
// replies go to subscriber_centrifugo.cpp and centrifugo_protobuf.cpp.
#include "loadtest/subscriber.hpp"

#include <nlohmann/json.hpp>

namespace herald::loadtest {

std::string subscriber::ws_subscribe(const track& t, std::size_t request_id) const {
  std::string m = R"({"op":"subscribe","id":)";
  m += std::to_string(request_id);
  m += R"(,"channel":")";
  m += channel_name(t);
  m += '"';
  if (spec_.filter)
    m += R"(,"filter":{"key":"event","cmp":"eq","val":"loadtest"})";
  if (t.asks_recovery(resume_)) {
    m += R"(,"since":{"epoch":")";
    m += t.epoch;
    m += R"(","offset":)";
    m += std::to_string(t.last_offset);
    m += '}';
  }
  m += '}';
  return m;
}

void subscriber::on_ws_message(ws::opcode op, std::string_view payload, std::int64_t now) {
  switch (op) {
  case ws::opcode::text: {
    std::string_view channel;
    std::uint64_t offset = 0;
    if (spec_.kind == transport::centrifugo) {
      if (!scan_centrifugo_publication(payload, channel, offset)) {
        on_centrifugo_control(payload, now);
        return;
      }
    } else if (!scan_ws_publication(payload, channel, offset)) {
      on_ws_control(payload);
      return;
    }
    track* t = find_track(channel);
    pub_fields f;
    if (t != nullptr && spec_.delta) {
      // Centrifugo with deltas: the data is a JSON string, or a delta.
      auto j = nlohmann::json::parse(payload, nullptr, false);
      const nlohmann::json* pub = j.is_object() ? &j["push"]["pub"] : nullptr;
      if (pub == nullptr || !pub->is_object() || !delta_fields(*t, *pub, f)) {
        ++ctx_.counters.unparsed;
        return;
      }
      on_publication(*t, true, offset, f, now);
      return;
    }
    if (t == nullptr || !scan_pub_fields(payload, f)) {
      ++ctx_.counters.unparsed;
      return;
    }
    on_publication(*t, true, offset, f, now);
    return;
  }
  case ws::opcode::binary:
    if (spec_.kind == transport::centrifugo_protobuf)
      on_protobuf_message(payload, now);
    else
      ++ctx_.counters.unparsed;
    return;
  case ws::opcode::ping:
    send_frame(ws::opcode::pong, payload);
    return;
  case ws::opcode::close: {
    send_frame(ws::opcode::close, payload.substr(0, 2));
    unsigned code =
      payload.size() >= 2
        ? (static_cast<unsigned char>(payload[0]) << 8 | static_cast<unsigned char>(payload[1]))
        : 1005;
    ++ctx_.notices["ws close " + std::to_string(code)];
    if (state_ == state::established)
      deferred_drop_ = true;
    deferred_ = "websocket: close " + std::to_string(code);
    return;
  }
  case ws::opcode::pong:
    return;
  default:
    deferred_ = "websocket: unexpected binary message";
    return;
  }
}

void subscriber::on_ws_control(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("op") || !j["op"].is_string()) {
    ++ctx_.counters.unparsed;
    return;
  }
  const auto& op = j["op"].get_ref<const std::string&>();
  track* t = find_track(j.value("channel", std::string{}));
  if (op == "subscribed") {
    if (t == nullptr || t->subscribed)
      return;
    if (t->on_subscribed(resume_, j.value("recovered", false), j.value("epoch", std::string{}),
                         j.value("offset", std::uint64_t{0}))) {
      ++ctx_.counters.gap_notices;
      ++ctx_.notices["ws subscribed recovered=false " + j.value("reason", std::string{"?"})];
    }
    established_if_all_subscribed();
  } else if (op == "gap") {
    ++ctx_.counters.gap_notices;
    ++ctx_.notices["ws gap " + j.value("reason", std::string{"?"})];
  } else if (op == "error") {
    std::string code = j.value("code", std::string{"?"});
    ++ctx_.notices["ws error " + code];
    if (state_ != state::established)
      deferred_ = "websocket: error " + code;
  }
}

} // namespace herald::loadtest
