#include "net/wire/centrifugo/protocol.hpp"

#include "net/wire/enum_names.hpp"
#include "net/wire/json_input.hpp"
#include "net/wire/ws/frame_codec.hpp"

#include <nlohmann/json.hpp>

#include <mutex>

namespace herald::net::centrifugo {

using nlohmann::json;

namespace {

// A JSON number that is an integer in [0, max]; false otherwise.
bool read_uint(const json& j, std::uint64_t max, std::uint64_t& out) {
  if (j.is_number_unsigned())
    out = j.get<std::uint64_t>();
  else if (j.is_number_integer() && j.get<std::int64_t>() >= 0)
    out = static_cast<std::uint64_t>(j.get<std::int64_t>());
  else
    return false;
  return out <= max;
}

// Reads an optional string field of `obj` into `out`; false when present and
// not a string.
bool read_string(const json& obj, const char* key, std::string& out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null())
    return true;
  if (!it->is_string())
    return false;
  out = it->get<std::string>();
  return true;
}

bool read_bool(const json& obj, const char* key, bool& out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null())
    return true;
  if (!it->is_boolean())
    return false;
  out = it->get<bool>();
  return true;
}

// Centrifugo offers a tags filter or delta compression on a subscription, not both.
constexpr const char* tf_with_delta =
  "a tags filter (\"tf\") cannot be combined with \"delta\" on one subscription";

parsed refuse(std::uint32_t id, std::string message) {
  parsed p;
  p.err = {id, error_code::bad_request, std::move(message)};
  return p;
}

// The `id` of a command refused for a duplicate key elsewhere in it, so the
// refusal is a reply (107) rather than the end of the connection; 0 when the
// id itself is repeated, missing or not an id. Keeps only top-level values
// (a deep document is walked, not built).
std::uint32_t id_despite_duplicates(std::string_view line) {
  int ids = 0;
  auto top_only = [&ids](int depth, json::parse_event_t event, json& value) {
    if (event == json::parse_event_t::key && depth == 1 && value == "id")
      ++ids;
    return depth <= 1;
  };
  auto doc = json::parse(line.begin(), line.end(), top_only, false);
  std::uint64_t v = 0;
  if (ids != 1 || !doc.is_object() || !read_uint(doc["id"], 0xffffffffULL, v))
    return 0;
  return static_cast<std::uint32_t>(v);
}

parsed parse_line(std::string_view line) {
  json doc;
  std::string why;
  if (!parse_client_json(line, doc, max_json_depth, &why) || !doc.is_object()) {
    if (why.rfind("duplicate key", 0) == 0)
      return refuse(id_despite_duplicates(line), "the command has a " + why);
    return refuse(0, "a command must be one JSON object");
  }
  std::uint32_t id = 0;
  if (auto it = doc.find("id"); it != doc.end()) {
    std::uint64_t v = 0;
    if (!read_uint(*it, 0xffffffffULL, v))
      return refuse(0, "\"id\" must be an integer from 1 to 2^32-1");
    id = static_cast<std::uint32_t>(v);
  }
  // The method is the one field besides `id` (client.proto Command: one of
  // connect, subscribe, ...). Protocol v1's `method`/`params` form is refused.
  const json* body = nullptr;
  std::string name;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() == "id")
      continue;
    if (body != nullptr)
      return refuse(id, "a command names one method");
    body = &it.value();
    name = it.key();
  }
  parsed out;
  out.cmd.id = id;
  if (body == nullptr) {
    if (id != 0)
      return refuse(id, "the command names no method");
    out.ok = true; // `{}`: the client's pong
    out.cmd.kind = method::pong;
    return out;
  }
  if (id == 0)
    return refuse(0, "a command needs an \"id\" from 1 to 2^32-1");
  if (!body->is_object() && !body->is_null())
    return refuse(id, "\"" + name + "\" must be an object");
  static const json empty = json::object();
  const json& req = body->is_null() ? empty : *body;
  auto& cmd = out.cmd;
  if (name == "connect" || name == "refresh") {
    cmd.kind = name == "connect" ? method::connect : method::refresh;
    if (!read_string(req, "token", cmd.token))
      return refuse(id, "\"token\" must be a string");
  } else if (name == "subscribe" || name == "unsubscribe") {
    cmd.kind = name == "subscribe" ? method::subscribe : method::unsubscribe;
    auto ch = req.find("channel");
    if (ch == req.end() || !ch->is_string())
      return refuse(id, "\"channel\" must be a string");
    cmd.channel = ch->get<std::string>();
    if (cmd.kind == method::subscribe) {
      if (!read_bool(req, "recover", cmd.recover) || !read_string(req, "epoch", cmd.since.epoch))
        return refuse(id, "\"recover\" must be a boolean and \"epoch\" a string");
      if (auto o = req.find("offset");
          o != req.end() && !o->is_null() && !read_uint(*o, max_client_offset, cmd.since.offset))
        return refuse(id, "\"offset\" must be an integer from 0 to 2^53-1");
      if (auto f = req.find("flag"); f != req.end() && !f->is_null()) {
        std::uint64_t v = 0;
        if (!read_uint(*f, 0x7fffffffULL, v))
          return refuse(id, "\"flag\" must be a non-negative integer");
        cmd.flag = static_cast<std::uint32_t>(v);
      }
      if (cmd.since.epoch.size() > 64)
        return refuse(id, "\"epoch\" longer than 64 characters");
      std::string delta;
      if (!read_string(req, "delta", delta))
        return refuse(id, "\"delta\" must be a string");
      if (!delta.empty() && delta != "fossil")
        return refuse(id, "\"delta\" must be \"fossil\", the only delta format");
      cmd.delta = !delta.empty();
      if (auto tf = req.find("tf"); tf != req.end() && !tf->is_null()) {
        std::string why;
        cmd.filter = tags_filter::parse(*tf, why);
        if (!cmd.filter)
          return refuse(id, "invalid tags filter \"tf\": " + why);
        if (cmd.delta)
          return refuse(id, tf_with_delta);
      }
    }
  } else if (name == "ping") {
    cmd.kind = method::ping;
  } else {
    cmd.kind = method::unsupported;
    cmd.unsupported = name.substr(0, 32);
  }
  out.ok = true;
  return out;
}

json reply(std::uint32_t id, const char* name, json body) {
  json j = json::object();
  if (id != 0)
    j["id"] = id;
  j[name] = std::move(body);
  return j;
}

} // namespace

std::string_view message_of(error_code c) noexcept {
  return enum_name<error_code::internal, error_code::unrecoverable_position>(
    c,
    {"internal server error", "unauthorized", "unknown channel", "permission denied",
     "method not found", "already subscribed", "limit exceeded", "bad request", "not available",
     "token expired", "expired", "too many requests", "unrecoverable position"},
    "internal server error");
}

error_code error_for(errc e) noexcept {
  return static_cast<error_code>(info(e).centrifugo_code);
}

std::vector<parsed> parse_commands(std::string_view text) {
  std::vector<parsed> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    auto line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos)
      continue;
    out.push_back(parse_line(line));
  }
  return out;
}

std::string encode_error(std::uint32_t id, error_code code, std::string_view message,
                         bool temporary) {
  json e{{"code", static_cast<std::uint32_t>(code)},
         {"message", message.empty() ? message_of(code) : message}};
  if (temporary)
    e["temporary"] = true;
  return dump_compact(reply(id, "error", std::move(e)));
}

std::string encode_connect(std::uint32_t id, std::string_view client, std::string_view version,
                           std::uint32_t ping_seconds, std::uint32_t ttl_seconds) {
  json r{{"client", client}, {"version", version}};
  if (ping_seconds > 0) {
    r["ping"] = ping_seconds;
    r["pong"] = true;
  }
  if (ttl_seconds > 0) {
    r["expires"] = true;
    r["ttl"] = ttl_seconds;
  }
  return dump_compact(reply(id, "connect", std::move(r)));
}

std::string encode_refresh(std::uint32_t id, std::string_view client, std::string_view version,
                           std::uint32_t ttl_seconds) {
  json r{{"client", client}, {"version", version}};
  if (ttl_seconds > 0) {
    r["expires"] = true;
    r["ttl"] = ttl_seconds;
  }
  return dump_compact(reply(id, "refresh", std::move(r)));
}

namespace {
// `{"data":<data>,"offset":N,"tags":{"event":"..",<p.tags>}[,"delta":true]}` with
// `data` inserted as is (JSON text). Channel and event names are validated
// ([A-Za-z0-9_.:-], StrKey): no escaping needed.
std::string pub_object(std::string_view data, const publication& p, bool delta_flag) {
  std::string out;
  out.reserve(data.size() + p.event.size() + 64);
  out += R"({"data":)";
  out += data;
  out += R"(,"offset":)";
  out += std::to_string(p.offset);
  out += R"(,"tags":{"event":")";
  out += p.event;
  out += '"';
  if (!p.tags.empty()) {
    out += ',';
    append_tag_members(out, p.tags);
  }
  out += '}';
  if (delta_flag)
    out += R"(,"delta":true)";
  out += '}';
  return out;
}
} // namespace

std::string encode_publication_object(const publication& p) {
  return pub_object(p.data, p, false); // data is compact JSON already
}

std::string encode_delta_object(const publication& p, bool as_delta) {
  // The data (validated JSON) and the delta (UTF-8 by construction) are
  // valid UTF-8; `replace` only keeps a bug from throwing on a shard.
  const auto& text = as_delta ? p.delta : p.data;
  return pub_object(
    nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), p,
    as_delta);
}

std::string encode_subscribe(std::uint32_t id, const stream_position& position, bool was_recovering,
                             bool recovered, const std::vector<const publication*>& replay,
                             bool delta) {
  // Written by hand around the publications, which are JSON text already.
  json head{{"recoverable", true},
            {"positioned", true},
            {"epoch", position.epoch},
            {"offset", position.offset},
            {"was_recovering", was_recovering},
            {"recovered", recovered}};
  if (delta)
    head["delta"] = true;
  std::string body = dump_compact(head);
  if (!replay.empty()) {
    body.pop_back(); // '}'
    body += R"(,"publications":[)";
    const publication* prev = nullptr;
    for (const auto* p : replay) {
      if (prev)
        body += ',';
      body += delta ? encode_delta_object(*p, prev && delta_follows(*prev, *p))
                    : encode_publication_object(*p);
      prev = p;
    }
    body += "]}";
  }
  std::string out = R"({"id":)" + std::to_string(id) + R"(,"subscribe":)";
  out += body;
  out += '}';
  return out;
}

std::string encode_unsubscribe(std::uint32_t id) {
  return dump_compact(reply(id, "unsubscribe", json::object()));
}

std::string encode_ping(std::uint32_t id) {
  return dump_compact(reply(id, "ping", json::object()));
}

namespace {
// `{"push":{"channel":"..","pub":<pub_object>}}` as a text frame: its
// payload into `body`, its RFC 6455 header into `header`.
void build_push_frame(const publication& p, const std::string& pub_object, frame& body,
                      std::string& header) {
  std::string out = R"({"push":{"channel":")";
  out += p.channel;
  out += R"(","pub":)";
  out += pub_object;
  out += "}}";
  char h[ws::max_server_header_bytes];
  header.assign(h, ws::encode_header(ws::opcode::text, out.size(), h));
  body = make_frame(std::move(out));
}

void build_push(const publication& p) {
  build_push_frame(p, encode_publication_object(p), p.centrifugo, p.centrifugo_header);
}

void build_delta_push(const publication& p, bool as_delta, frame& body, std::string& header) {
  build_push_frame(p, encode_delta_object(p, as_delta), body, header);
}
} // namespace

publication_bytes delta_push_bytes(const publication& p, bool as_delta) {
  if (as_delta) {
    std::call_once(p.centrifugo_delta_once, [&] {
      build_delta_push(p, true, p.centrifugo_delta, p.centrifugo_delta_header);
    });
    return {p.centrifugo_delta_header, p.centrifugo_delta};
  }
  std::call_once(p.centrifugo_full_once, [&] {
    build_delta_push(p, false, p.centrifugo_full, p.centrifugo_full_header);
  });
  return {p.centrifugo_full_header, p.centrifugo_full};
}

const frame& publication_push(const publication& p) {
  std::call_once(p.centrifugo_once, build_push, std::cref(p));
  return p.centrifugo;
}

const std::string& publication_push_header(const publication& p) {
  std::call_once(p.centrifugo_once, build_push, std::cref(p));
  return p.centrifugo_header;
}

publication_bytes publication_push_bytes(const publication& p) {
  std::call_once(p.centrifugo_once, build_push, std::cref(p));
  return {p.centrifugo_header, p.centrifugo};
}

std::string encode_unsubscribe_push(std::string_view channel, std::uint32_t code,
                                    std::string_view reason) {
  json j{{"push", {{"channel", channel}, {"unsubscribe", {{"code", code}, {"reason", reason}}}}}};
  return dump_compact(j);
}

std::pair<std::uint16_t, std::string> close_for(std::uint16_t code, std::string_view reason) {
  switch (code) {
  case 1012:
  case 1001:
    return {3001, "shutdown"};
  case 1013:
    return {3008, "slow"};
  case 4001:
  case 4003:
    return {3500, reason.empty() ? std::string{"invalid token"}
                                 : "invalid token: " + std::string{reason.substr(0, 100)}};
  case 4002:
    return {3005, "expired"};
  case 1008:
    return {3501, "bad request: " + std::string{reason.substr(0, 100)}};
  case 1011:
    return {3004, "internal server error"};
  default:
    return {code, std::string{reason}};
  }
}

} // namespace herald::net::centrifugo
