#include "net/wire/http/server_api.hpp"

#include "net/wire/centrifugo/protocol.hpp"
#include "net/wire/channel_name.hpp"
#include "net/wire/json_input.hpp"

#include <nlohmann/json.hpp>

namespace herald::net::http {

using nlohmann::json;

namespace {

json position_result(const stream_position& p, std::string_view suppressed = {}) {
  json r{{"offset", p.offset}};
  if (!p.epoch.empty())
    r["epoch"] = p.epoch;
  if (!suppressed.empty()) {
    r["suppressed"] = true;
    r["suppress_reason"] = suppressed;
  }
  return r;
}

} // namespace

std::error_code parse_api_publish(std::string_view body, bool broadcast, std::size_t max_channels,
                                  publish_request& out, std::string& detail) {
  json doc;
  if (!parse_body_object(body, doc, detail))
    return errc::invalid_json;
  const char* names = broadcast ? "channels" : "channel";
  const char* other = broadcast ? "channel" : "channels";
  if (doc.contains(other)) {
    detail = broadcast ? "/api/broadcast takes \"channels\"; use /api/publish for one channel"
                       : "/api/publish takes \"channel\"; use /api/broadcast for several";
    return errc::invalid_request;
  }
  if (auto ec = broadcast ? check_known_fields(doc, api_broadcast_fields, detail)
                          : check_known_fields(doc, api_publish_fields, detail))
    return ec;
  if (auto b64 = doc.find("b64data"); b64 != doc.end() && !b64->is_null()) {
    detail = "\"b64data\" (binary data) is not supported: Herald publications are JSON";
    return errc::invalid_request;
  }
  if (auto skip = doc.find("skip_history"); skip != doc.end() && *skip == true) {
    detail = "\"skip_history\" is not supported: every publication is kept in history";
    return errc::invalid_request;
  }
  std::string event{default_api_event};
  publication_tags tags;
  if (auto t = doc.find("tags"); t != doc.end() && !t->is_null()) {
    // `tags.event` is the event name; the other tags travel with the publication.
    if (!read_tags(*t, event_tag_policy::take, tags, event, detail))
      return errc::invalid_request;
  }
  // The same checks as POST /v1/publish, on the same shape.
  json herald{{"event", std::move(event)}};
  if (auto data = doc.find("data"); data != doc.end()) // any JSON value, null too
    herald["data"] = std::move(*data);
  if (!tags.empty()) {
    json rest = json::object();
    for (auto& [k, v] : tags)
      rest[k] = std::move(v);
    herald["tags"] = std::move(rest);
  }
  if (auto ch = doc.find(names); ch != doc.end())
    herald[names] = std::move(*ch);
  for (const char* field : {"idempotency_key", "version", "version_epoch"})
    if (auto f = doc.find(field); f != doc.end() && !f->is_null())
      herald[field] = std::move(*f);
  if (!herald.contains(names)) {
    detail = std::string{"\""} + names + "\" is required";
    return errc::invalid_request;
  }
  // The same checks as POST /v1/publish on the object built here (not a
  // second parse of its text). Centrifugo publishes once per entry of
  // "channels" and answers each in order.
  return read_publish_request(herald, max_channels, out, detail, channel_repeats::publish_each);
}

std::error_code parse_api_history(std::string_view body, history_request& out,
                                  std::string& detail) {
  json doc;
  if (!parse_body_object(body, doc, detail))
    return errc::invalid_json;
  if (auto ec = check_known_fields(doc, api_history_fields, detail))
    return ec;
  auto ch = doc.find("channel");
  if (ch == doc.end() || !ch->is_string()) {
    detail = "\"channel\" must be a string";
    return errc::invalid_request;
  }
  out.channel = ch->get<std::string>();
  if (auto fault = check_channel(out.channel); fault != channel_fault::none) {
    detail = channel_error_detail(out.channel, fault);
    return errc::invalid_channel;
  }
  out.limit = 0;
  if (auto l = doc.find("limit"); l != doc.end() && !l->is_null()) {
    if (!l->is_number_integer()) {
      detail = "\"limit\" must be an integer";
      return errc::invalid_request;
    }
    auto v = l->get<std::int64_t>();
    // Centrifugo: a negative limit means "all"; Herald caps what it returns.
    out.limit = v < 0 ? max_history_limit
                      : static_cast<std::size_t>(std::min<std::int64_t>(v, max_history_limit));
  }
  if (auto s = doc.find("since"); s != doc.end() && !s->is_null()) {
    detail = "\"since\" is not supported: Herald returns the latest publications "
             "(recover from a position by subscribing with it)";
    return errc::invalid_request;
  }
  if (auto r = doc.find("reverse"); r != doc.end() && *r == true) {
    detail = "\"reverse\" is not supported: publications come oldest first";
    return errc::invalid_request;
  }
  return {};
}

std::string encode_api_error(errc code, std::string_view message) {
  auto c = centrifugo::error_for(code);
  return dump_compact({{"error",
                        {{"code", static_cast<std::uint32_t>(c)},
                         {"message", message.empty() ? info(code).message : message}}}});
}

std::string encode_api_publish(const stream_position& position, std::string_view suppressed) {
  return dump_compact({{"result", position_result(position, suppressed)}});
}

std::string encode_api_broadcast(const std::vector<stream_position>& positions,
                                 const std::vector<std::string>& suppressed) {
  json list = json::array();
  for (std::size_t i = 0; i < positions.size(); ++i)
    list.push_back(
      {{"result", position_result(positions[i], i < suppressed.size() ? suppressed[i] : "")}});
  return dump_compact({{"result", {{"responses", std::move(list)}}}});
}

std::string encode_api_history(const stream_position& position,
                               const std::vector<publication_ptr>& latest) {
  std::string out = R"({"result":{"publications":[)";
  bool first = true;
  for (const auto& p : latest) {
    if (!first)
      out += ',';
    first = false;
    out += centrifugo::encode_publication_object(*p);
  }
  out += "],";
  auto pos = dump_compact(json{{"epoch", position.epoch}, {"offset", position.offset}});
  out.append(pos, 1, std::string::npos); // without its '{'
  out += '}';
  return out;
}

std::string encode_channel_position(std::string_view channel, const stream_position& position) {
  return dump_compact(
    {{"channel", channel}, {"epoch", position.epoch}, {"offset", position.offset}});
}

} // namespace herald::net::http
