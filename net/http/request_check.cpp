#include "net/http/request_check.hpp"

#include "net/wire/channel_name.hpp"
#include "net/wire/json_input.hpp"
#include "net/wire/sse/cursor.hpp"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include <algorithm>
#include <iterator>
#include <vector>

namespace herald::net::http {

std::size_t header_count(const bhttp::fields& fields) noexcept {
  return static_cast<std::size_t>(std::distance(fields.begin(), fields.end()));
}

errc check_head(const bhttp::fields& fields, std::size_t max_fields, std::string& detail) {
  if (header_count(fields) > max_fields) {
    detail = "more than " + std::to_string(max_fields) + " header fields";
    return errc::headers_too_large;
  }
  auto te = fields.count(bhttp::field::transfer_encoding);
  if (te > 0) {
    if (te > 1) {
      detail = "Transfer-Encoding must appear once";
      return errc::invalid_request;
    }
    auto v = fields[bhttp::field::transfer_encoding];
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t'))
      v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t'))
      v.remove_suffix(1);
    if (!beast::iequals(v, "chunked")) {
      detail = "Transfer-Encoding must be exactly 'chunked'";
      return errc::invalid_request;
    }
    if (fields.count(bhttp::field::content_length) > 0) {
      detail = "Transfer-Encoding and Content-Length together";
      return errc::invalid_request;
    }
  }
  return errc::none;
}

bool is_api_target(std::string_view target) noexcept {
  constexpr std::string_view api = "/api";
  if (target.substr(0, api.size()) != api)
    return false;
  return target.size() == api.size() || target[api.size()] == '/' || target[api.size()] == '?';
}

errc classify(std::string_view target, route& out, std::string& detail, std::string* channel) {
  auto parsed =
    boost::urls::parse_origin_form(boost::core::string_view{target.data(), target.size()});
  if (!parsed) {
    detail = "malformed request target";
    out = route::unknown;
    return errc::invalid_request;
  }
  auto path = parsed->path();
  if (path == "/v1/publish")
    out = route::publish;
  else if (path == "/v1/sse")
    out = route::sse;
  else if (path == "/v1/ws")
    out = route::ws;
  else if (path == "/connection/websocket")
    out = route::centrifugo_ws;
  else if (path == "/api/publish")
    out = route::api_publish;
  else if (path == "/api/broadcast")
    out = route::api_broadcast;
  else if (path == "/api/history")
    out = route::api_history;
  else if (path == "/api/info")
    out = route::api_info;
  else if (constexpr std::string_view prefix = "/v1/channels/";
           path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0) {
    out = route::channel;
    if (channel)
      *channel = path.substr(prefix.size());
  } else if (path == "/healthz")
    out = route::healthz;
  else if (path == "/readyz")
    out = route::readyz;
  else if (path == "/demo")
    out = route::demo;
  else if (path == "/metrics")
    out = route::metrics;
  else if (path == "/v1/status")
    out = route::status;
  else if (path == "/v1/info")
    out = route::info;
  else if (path == "/")
    out = route::root;
  else
    out = route::unknown;
  return errc::none;
}

namespace {
// What each route reads as one value (docs/protocol.md "Repeated parameters").
struct singular_set {
  std::vector<std::string_view> headers;
  std::vector<std::string_view> params;
};

const singular_set& singular_of(route where) {
  static const singular_set none{};
  static const singular_set sse{{"Authorization", "Last-Event-ID", "Origin"},
                                {"token", "last_event_id", "envelope"}};
  static const singular_set ws{
    {"Authorization", "Origin", "Host", "Sec-WebSocket-Key", "Sec-WebSocket-Version"}, {}};
  static const singular_set publish{{"Authorization", "Idempotency-Key"}, {}};
  static const singular_set channel{{"Authorization"}, {}};
  static const singular_set api{{"Authorization", "X-API-Key"}, {}};
  switch (where) {
  case route::sse:
    return sse;
  case route::ws:
  case route::centrifugo_ws:
    return ws;
  case route::publish:
    return publish;
  case route::channel:
    return channel;
  case route::api_publish:
  case route::api_broadcast:
  case route::api_history:
  case route::api_info:
    return api;
  default:
    return none;
  }
}
} // namespace

errc check_singular(const bhttp::fields& fields, std::string_view target, route where,
                    std::string& detail) {
  const auto& once = singular_of(where);
  for (auto name : once.headers) {
    if (fields.count(name) > 1) {
      detail = "the " + std::string{name} + " header is given more than once";
      return errc::invalid_request;
    }
  }
  if (once.params.empty())
    return errc::none;
  auto parsed =
    boost::urls::parse_origin_form(boost::core::string_view{target.data(), target.size()});
  if (!parsed)
    return errc::none; // classify() refused it already
  for (auto name : once.params) {
    std::size_t n = 0;
    for (auto param : parsed->params())
      if (param.key == name && ++n > 1) {
        detail = "the " + std::string{name} + " query parameter is given more than once";
        return errc::invalid_request;
      }
  }
  return errc::none;
}

namespace {

// Appends `value` to `list` unless it is there already (a name given twice
// counts once). False when the list then holds more than `max` names.
bool add_once(std::vector<std::string>& list, std::string_view value, std::size_t max) {
  if (std::find(list.begin(), list.end(), value) == list.end())
    list.emplace_back(value);
  return list.size() <= max;
}

} // namespace

errc parse_sse_request(std::string_view target, const std::string_view* last_event_id,
                       std::size_t max_channels, sse_subscription& out, std::string& detail) {
  auto parsed =
    boost::urls::parse_origin_form(boost::core::string_view{target.data(), target.size()});
  if (!parsed) {
    detail = "malformed request target";
    return errc::invalid_request;
  }
  std::string cursor_text;
  bool has_cursor = false;
  for (auto param : parsed->params()) {
    if (param.key == "channel") {
      if (auto fault = check_channel(param.value); fault != channel_fault::none) {
        detail = channel_error_detail(param.value, fault, "?channel=: ");
        return errc::invalid_channel;
      }
      if (!add_once(out.channels, param.value, max_channels)) {
        detail = "at most " + std::to_string(max_channels) + " channels per connection";
        return errc::too_many_channels;
      }
    } else if (param.key == "event") {
      if (!is_valid_event_name(param.value)) {
        detail = "each ?event= must be an event name: 1-64 characters of [A-Za-z0-9_.:-], "
                 "not starting with 'herald.'";
        return errc::invalid_event;
      }
      if (!add_once(out.events, param.value, max_sse_events)) {
        detail = "at most " + std::to_string(max_sse_events) + " ?event= per connection";
        return errc::invalid_request;
      }
    } else if (param.key == "last_event_id") {
      cursor_text = param.value;
      has_cursor = true;
    } else if (param.key == "envelope") {
      if (param.value != "0" && param.value != "1") {
        detail = "?envelope= must be 1 (publications as {\"channel\":...,\"data\":...}) or 0";
        return errc::invalid_request;
      }
      out.envelope = param.value == "1";
    }
  }
  if (out.channels.empty()) {
    detail = "give at least one ?channel=";
    return errc::invalid_request;
  }
  // The header is what EventSource sends when it reconnects, so it is newer
  // than a last_event_id left in the URL.
  if (last_event_id) {
    cursor_text = std::string{*last_event_id};
    has_cursor = true;
  }
  if (has_cursor) {
    out.has_cursor = true;
    if (!sse::parse_cursor(cursor_text, max_channels, out.cursor))
      return errc::invalid_cursor;
  }
  return errc::none;
}

} // namespace herald::net::http
