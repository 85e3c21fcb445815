#include "net/http/publish_request.hpp"

#include "net/channel_name.hpp"
#include "net/json_input.hpp"

#include <algorithm>

namespace herald::net::http {

std::error_code parse_publish_request(std::string_view body, std::size_t max_channels,
                                      publish_request& out, std::string& detail) {
  using nlohmann::json;
  json doc;
  // The body object itself is one level: `data` may nest max_json_depth deep.
  if (!parse_client_json(body, doc, max_json_depth + 1) || !doc.is_object()) {
    detail = "the body must be a JSON object, with data nested at most "
             + std::to_string(max_json_depth) + " deep";
    return errc::invalid_json;
  }
  auto ch = doc.find("channel");
  auto chs = doc.find("channels");
  if ((ch == doc.end()) == (chs == doc.end())) {
    detail = "give exactly one of \"channel\" (string) or \"channels\" (array of strings)";
    return errc::invalid_request;
  }
  std::vector<std::string> names;
  if (ch != doc.end()) {
    if (!ch->is_string()) {
      detail = "\"channel\" must be a string";
      return errc::invalid_request;
    }
    names.push_back(ch->get<std::string>());
  } else {
    if (!chs->is_array() || chs->empty()) {
      detail = "\"channels\" must be a non-empty array of strings";
      return errc::invalid_request;
    }
    for (const auto& item : *chs) {
      if (!item.is_string()) {
        detail = "\"channels\" must be a non-empty array of strings";
        return errc::invalid_request;
      }
      auto name = item.get<std::string>();
      if (std::find(names.begin(), names.end(), name) == names.end())
        names.push_back(std::move(name));
      if (names.size() > max_channels) {
        detail = "at most " + std::to_string(max_channels) + " channels per publish";
        return errc::too_many_channels;
      }
    }
  }
  for (const auto& name : names) {
    if (validate_channel(name)) {
      detail = "invalid channel name";
      return errc::invalid_channel;
    }
  }
  auto ev = doc.find("event");
  if (ev == doc.end() || !ev->is_string()) {
    detail = "\"event\" must be a string";
    return errc::invalid_request;
  }
  auto event = ev->get<std::string>();
  if (!is_valid_event_name(event)) {
    detail = "event must be 1-64 characters of [A-Za-z0-9_.:-] and must not start with 'herald.'";
    return errc::invalid_event;
  }
  auto data = doc.find("data");
  if (data == doc.end()) {
    detail = "\"data\" is required (any JSON value)";
    return errc::invalid_request;
  }
  out.channels = std::move(names);
  out.event = std::move(event);
  out.data = dump_compact(*data);
  return {};
}

std::string encode_publish_response(const std::vector<std::string>& channels,
                                    const std::vector<std::uint64_t>& offsets) {
  // ordered_json keeps the request order (json would sort the keys).
  nlohmann::ordered_json offs = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < channels.size() && i < offsets.size(); ++i)
    offs[channels[i]] = offsets[i];
  nlohmann::ordered_json out;
  out["offsets"] = std::move(offs);
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

} // namespace herald::net::http
