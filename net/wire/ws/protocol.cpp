#include "net/wire/ws/protocol.hpp"

#include "net/wire/tags_filter.hpp"

#include "net/wire/channel_name.hpp"
#include "net/wire/json_input.hpp"

namespace herald::net::ws {

using nlohmann::json;

namespace {

bool read_since(const json& j, stream_position& pos) {
  if (!j.is_object())
    return false;
  auto e = j.find("epoch");
  auto o = j.find("offset");
  if (e == j.end() || o == j.end() || !e->is_string())
    return false;
  if (!o->is_number_unsigned() && !(o->is_number_integer() && o->get<std::int64_t>() >= 0))
    return false;
  pos.epoch = e->get<std::string>();
  pos.offset = o->get<std::uint64_t>();
  return is_valid_epoch(pos.epoch) && pos.offset <= max_client_offset;
}

// The fields each command may have (docs/protocol.md "WebSocket"); any
// other is refused, as in a publish body: a typo such as "sinse" would
// otherwise subscribe without recovery.
constexpr std::string_view ping_fields[] = {"op", "id"};
constexpr std::string_view token_fields[] = {"op", "id", "token"};
constexpr std::string_view subscribe_fields[] = {"op", "id", "channel", "since", "delta", "filter"};
constexpr std::string_view unsubscribe_fields[] = {"op", "id", "channel"};
constexpr std::string_view since_fields[] = {"epoch", "offset"};

void put_id(json& j, const json& id) {
  if (!id.is_null())
    j["id"] = id;
}

} // namespace

bool parse_command(std::string_view text, command& out, command_error& err) {
  json doc;
  std::string why;
  if (!parse_client_json(text, doc, max_json_depth, &why) || !doc.is_object()) {
    err = {errc::invalid_json,
           nullptr,
           why.rfind("duplicate key", 0) == 0 ? "the message has a " + why
                                              : "the message must be one JSON object",
           {}};
    return false;
  }
  json id;
  if (auto it = doc.find("id"); it != doc.end()) {
    // A number must be an integer that fits 64 bits (-2^63 .. 2^64-1), held
    // and echoed exactly; anything the parser could only keep as a double
    // (1.5, 1e3, -9223372036854775809) would come back altered (was:
    // -99999999999999999999999 echoed as -9.999999999999999e+22).
    if (!it->is_number_integer() && !it->is_string()) {
      err = {errc::invalid_request, nullptr, "\"id\" must be a 64-bit integer or a string", {}};
      return false;
    }
    if (it->is_string() && it->get_ref<const std::string&>().size() > 64) {
      err = {errc::invalid_request, nullptr, "\"id\" string longer than 64 characters", {}};
      return false;
    }
    id = *it;
  }
  auto op_it = doc.find("op");
  if (op_it == doc.end() || !op_it->is_string()) {
    err = {errc::invalid_request, id, "\"op\" must be a string", {}};
    return false;
  }
  const auto& name = op_it->get_ref<const std::string&>();
  command cmd;
  cmd.id = id;
  // A command's unknown field, or "" (the op's own list).
  auto unknown = [&]() -> std::string {
    if (name == "ping")
      return unknown_field(doc, ping_fields);
    if (name == "connect" || name == "refresh")
      return unknown_field(doc, token_fields);
    if (name == "subscribe") {
      auto why = unknown_field(doc, subscribe_fields);
      if (auto s = doc.find("since"); why.empty() && s != doc.end())
        if (auto in_since = unknown_field(*s, since_fields); !in_since.empty())
          why = "\"since\": " + in_since;
      return why;
    }
    if (name == "unsubscribe")
      return unknown_field(doc, unsubscribe_fields);
    return {};
  };
  if (auto why = unknown(); !why.empty()) {
    err = {errc::invalid_request, id, std::move(why), {}};
    err.subscribe = name == "subscribe";
    return false;
  }
  if (name == "ping") {
    cmd.kind = op::ping;
    out = std::move(cmd);
    return true;
  }
  if (name == "connect" || name == "refresh") {
    cmd.kind = name == "connect" ? op::connect : op::refresh;
    auto tok = doc.find("token");
    if (tok == doc.end() || !tok->is_string()) {
      err = {errc::invalid_request, id, "\"token\" must be a string", {}};
      return false;
    }
    cmd.token = tok->get<std::string>();
    out = std::move(cmd);
    return true;
  }
  if (name == "subscribe")
    cmd.kind = op::subscribe;
  else if (name == "unsubscribe")
    cmd.kind = op::unsubscribe;
  else {
    err = {errc::unknown_op,
           id,
           "unknown op; expected subscribe, unsubscribe, ping, connect or refresh",
           {}};
    return false;
  }
  auto ch = doc.find("channel");
  if (ch == doc.end() || !ch->is_string()) {
    err = {errc::invalid_request, id, "\"channel\" must be a string", {}};
    err.subscribe = cmd.kind == op::subscribe;
    return false;
  }
  cmd.channel = ch->get<std::string>();
  if (auto fault = check_channel(cmd.channel); fault != channel_fault::none) {
    // Echo the refused name (at most 200 bytes; dump escapes anything odd).
    err = {errc::invalid_channel, id, channel_error_detail(cmd.channel, fault),
           cmd.channel.substr(0, 200)};
    err.subscribe = cmd.kind == op::subscribe;
    return false;
  }
  if (cmd.kind == op::subscribe) {
    if (auto s = doc.find("since"); s != doc.end() && !s->is_null()) {
      stream_position pos;
      if (!read_since(*s, pos)) {
        err = {errc::invalid_since, id, std::string{info(errc::invalid_since).message},
               cmd.channel};
        err.subscribe = true;
        return false;
      }
      cmd.since = std::move(pos);
    }
    if (auto d = doc.find("delta"); d != doc.end() && !d->is_null()) {
      if (!d->is_string() || d->get_ref<const std::string&>() != "fossil") {
        err = {errc::invalid_request, id, "\"delta\" must be \"fossil\", the only delta format",
               cmd.channel};
        err.subscribe = true;
        return false;
      }
      cmd.delta = true;
    }
    if (auto f = doc.find("filter"); f != doc.end() && !f->is_null()) {
      std::string why;
      cmd.filter = tags_filter::parse(*f, why);
      if (!cmd.filter) {
        err = {errc::invalid_request, id, "invalid \"filter\": " + why, cmd.channel};
        err.subscribe = true;
        return false;
      }
    }
  }
  out = std::move(cmd);
  return true;
}

std::string encode_subscribed(const json& id, std::string_view channel, const stream_position& pos,
                              bool recovered, std::string_view reason, bool delta, bool cached,
                              bool conflated) {
  json j{{"op", "subscribed"}};
  put_id(j, id);
  j["channel"] = channel;
  j["epoch"] = pos.epoch;
  j["offset"] = pos.offset;
  j["recovered"] = recovered;
  if (!reason.empty())
    j["reason"] = reason;
  if (delta)
    j["delta"] = true;
  if (cached)
    j["cache"] = true;
  if (conflated)
    j["conflated"] = true;
  return dump_compact(j);
}

std::string encode_unsubscribed(const json& id, std::string_view channel) {
  json j{{"op", "unsubscribed"}};
  put_id(j, id);
  j["channel"] = channel;
  return dump_compact(j);
}

std::string encode_authenticated(const json& id, bool refreshed, bool authenticated,
                                 std::string_view sub, std::int64_t expires_at) {
  json j{{"op", refreshed ? "refreshed" : "connected"}};
  put_id(j, id);
  if (authenticated) {
    j["sub"] = sub;
    j["expires_at"] = expires_at;
  } else {
    j["sub"] = nullptr;
    j["expires_at"] = nullptr;
  }
  return dump_compact(j);
}

std::string encode_refresh_required(std::int64_t expires_at) {
  return dump_compact(json{{"op", "refresh_required"}, {"expires_at", expires_at}});
}

std::string encode_gap(std::string_view channel, std::string_view reason) {
  return dump_compact(json{{"op", "gap"}, {"channel", channel}, {"reason", reason}});
}

std::string encode_pong(const json& id) {
  json j{{"op", "pong"}};
  put_id(j, id);
  return dump_compact(j);
}

std::string encode_error(const json& id, errc code, std::string_view message,
                         std::string_view channel) {
  json j{{"op", "error"}};
  put_id(j, id);
  j["code"] = info(code).code;
  j["message"] = message.empty() ? info(code).message : message;
  if (!channel.empty())
    j["channel"] = channel;
  return dump_compact(j);
}

std::string encode_publication(std::string_view channel, std::uint64_t offset,
                               std::string_view event, std::string_view data_json,
                               const publication_tags& tags) {
  // Channel and event are validated names ([A-Za-z0-9_.:-] and a StrKey), so
  // they need no escaping; data is already compact JSON.
  std::string out;
  out.reserve(channel.size() + event.size() + data_json.size() + 80);
  out += R"({"op":"publication","channel":")";
  out += channel;
  out += R"(","offset":)";
  out += std::to_string(offset);
  out += R"(,"event":")";
  out += event;
  if (!tags.empty()) {
    out += R"(","tags":{)";
    append_tag_members(out, tags);
    out += R"(},"data":)";
  } else {
    out += R"(","data":)";
  }
  out += data_json;
  out += '}';
  return out;
}

std::string encode_delta_publication(std::string_view channel, std::uint64_t offset,
                                     std::string_view event, std::string_view text, bool as_delta,
                                     const publication_tags& tags) {
  // Valid UTF-8 by construction; `replace` only keeps a bug from throwing.
  auto out = encode_publication(
    channel, offset, event,
    json(std::string{text}).dump(-1, ' ', false, json::error_handler_t::replace), tags);
  if (as_delta) {
    out.pop_back(); // '}'
    out += R"(,"delta":true})";
  }
  return out;
}

} // namespace herald::net::ws
