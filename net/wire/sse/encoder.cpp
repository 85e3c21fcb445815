#include "net/wire/sse/encoder.hpp"

#include <nlohmann/json.hpp>

namespace herald::net::sse {

std::string encode_event(std::string_view event, std::string_view json) {
  std::string out;
  out.reserve(event.size() + json.size() + 16);
  out += "event: ";
  out += event;
  out += "\ndata: ";
  out += json;
  out += "\n\n";
  return out;
}

std::string encode_enveloped_event(std::string_view event, std::string_view channel,
                                   std::string_view json) {
  // The channel goes through the JSON writer (escapes included; a byte that
  // is not UTF-8 becomes U+FFFD instead of throwing, though channel names are
  // validated ASCII); the data is already compact JSON and is nested
  // verbatim, not parsed again.
  const auto name =
    nlohmann::json(channel).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string body;
  body.reserve(name.size() + json.size() + 22);
  body += "{\"channel\":";
  body += name;
  body += ",\"data\":";
  body += json;
  body += '}';
  return encode_event(event, body);
}

std::string encode_id_line(std::string_view cursor) {
  std::string out;
  out.reserve(cursor.size() + 5);
  out += "id: ";
  out += cursor;
  out += '\n';
  return out;
}

std::string encode_gap(std::string_view channel, std::string_view reason) {
  nlohmann::json j = nlohmann::json::object();
  if (!channel.empty())
    j["channel"] = channel;
  j["reason"] = reason;
  return encode_event("herald.gap", j.dump());
}

std::string encode_cursor_event(const std::vector<std::string_view>& conflated) {
  if (conflated.empty())
    return "event: herald.cursor\ndata: {}\n\n";
  nlohmann::json list = nlohmann::json::array();
  for (auto c : conflated)
    list.push_back(c);
  return encode_event("herald.cursor", nlohmann::json{{"conflated", std::move(list)}}.dump());
}

std::string encode_shutdown(unsigned retry_ms) {
  nlohmann::json j{{"reason", "shutdown"}, {"retry_ms", retry_ms}};
  return "retry: " + std::to_string(retry_ms) + "\n" + encode_event("herald.shutdown", j.dump());
}

std::string encode_response_head(unsigned retry_ms) {
  std::string out = "HTTP/1.1 200 OK\r\n"
                    "Content-Type: text/event-stream\r\n"
                    "Cache-Control: no-cache\r\n"
                    "X-Accel-Buffering: no\r\n"
                    "\r\n";
  out += "retry: " + std::to_string(retry_ms) + "\n\n";
  return out;
}

} // namespace herald::net::sse
