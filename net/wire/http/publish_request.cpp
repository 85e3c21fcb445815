#include "net/wire/http/publish_request.hpp"

#include "net/wire/channel_name.hpp"
#include "net/wire/json_input.hpp"

#include <algorithm>
#include <charconv>

namespace herald::net::http {

bool parse_body_object(std::string_view body, nlohmann::json& doc, std::string& detail) {
  std::string why;
  // The body object itself is one level: its values may nest max_json_depth deep.
  if (!parse_client_json(body, doc, max_json_depth + 1, &why)) {
    if (why.rfind(nested_too_deep, 0) == 0)
      detail = "the body nests deeper than " + std::to_string(max_json_depth) +
               " levels inside its object (the most for data)";
    else
      detail = (why.rfind("duplicate key", 0) == 0 ? "the body has a " : "the body is ") + why;
    return false;
  }
  if (!doc.is_object()) {
    detail = std::string{"the body must be a JSON object, not "} +
             (doc.is_array() ? "an array" : doc.is_string() ? "a string"
                                        : doc.is_null()     ? "null"
                                        : doc.is_boolean()  ? "a boolean"
                                                            : "a number");
    return false;
  }
  return true;
}

std::error_code check_known_fields(const nlohmann::json& doc, const std::string_view* known,
                                   std::size_t known_count, std::string& detail) {
  auto why = unknown_field(doc, known, known_count);
  if (why.empty())
    return {};
  detail = std::move(why);
  return errc::invalid_request;
}

std::error_code parse_publish_request(std::string_view body, std::size_t max_channels,
                                      publish_request& out, std::string& detail,
                                      channel_repeats repeats) {
  nlohmann::json doc;
  if (!parse_body_object(body, doc, detail))
    return errc::invalid_json;
  return read_publish_request(doc, max_channels, out, detail, repeats);
}

std::error_code read_publish_request(const nlohmann::json& doc, std::size_t max_channels,
                                     publish_request& out, std::string& detail,
                                     channel_repeats repeats) {
  if (auto ec = check_known_fields(doc, publish_fields, detail))
    return ec;
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
      if (repeats == channel_repeats::publish_each ||
          std::find(names.begin(), names.end(), name) == names.end())
        names.push_back(std::move(name));
      if (names.size() > max_channels) {
        detail = "at most " + std::to_string(max_channels) + " channels per publish";
        return errc::too_many_channels;
      }
    }
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (auto fault = check_channel(names[i]); fault != channel_fault::none) {
      std::string where; // the entry's index in "channels"
      if (ch == doc.end()) {
        std::size_t at = 0;
        while (at + 1 < chs->size() && (*chs)[at].get_ref<const std::string&>() != names[i])
          ++at;
        where = "channels[" + std::to_string(at) + "]: ";
      }
      detail = channel_error_detail(names[i], fault, where);
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
  std::string key;
  if (auto k = doc.find("idempotency_key"); k != doc.end()) {
    if (!k->is_string() || !is_valid_idempotency_key(k->get_ref<const std::string&>())) {
      detail = "\"idempotency_key\" must be a string of 1-128 printable ASCII characters";
      return errc::invalid_request;
    }
    key = k->get<std::string>();
  }
  std::uint64_t version = 0;
  std::string version_epoch;
  if (auto v = doc.find("version"); v != doc.end() && !v->is_null()) {
    bool ok = false;
    if (v->is_number_unsigned()) {
      version = v->get<std::uint64_t>();
      ok = true;
    } else if (v->is_string()) {
      const auto& text = v->get_ref<const std::string&>();
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), version);
      ok = ec == std::errc{} && end == text.data() + text.size() && !text.empty() &&
           text.front() != '+' && text.front() != '-';
    }
    if (!ok || version == 0) {
      detail = "\"version\" must be an integer from 1 to 18446744073709551615 (or a string of "
               "its digits)";
      return errc::invalid_request;
    }
  }
  if (auto e = doc.find("version_epoch"); e != doc.end() && !e->is_null()) {
    if (!e->is_string() || !is_valid_idempotency_key(e->get_ref<const std::string&>()) ||
        e->get_ref<const std::string&>().size() > 64) {
      detail = "\"version_epoch\" must be a string of 1-64 printable ASCII characters";
      return errc::invalid_request;
    }
    if (version == 0) {
      detail = "\"version_epoch\" needs a \"version\"";
      return errc::invalid_request;
    }
    version_epoch = e->get<std::string>();
  }
  out.version = version;
  out.version_epoch = std::move(version_epoch);
  publication_tags tags;
  if (auto t = doc.find("tags"); t != doc.end() && !t->is_null()) {
    std::string ignored;
    if (!read_tags(*t, event_tag_policy::refuse, tags, ignored, detail))
      return errc::invalid_request;
  }
  out.idempotency_key = std::move(key);
  out.tags = std::move(tags);
  out.channels = std::move(names);
  out.event = std::move(event);
  out.data = dump_compact(*data);
  return {};
}

bool is_valid_idempotency_key(std::string_view key) noexcept {
  if (key.empty() || key.size() > 128)
    return false;
  for (char c : key)
    if (c < 0x21 || c > 0x7e)
      return false;
  return true;
}

std::error_code apply_idempotency_header(std::string_view header, publish_request& req,
                                         std::string& detail) {
  if (!is_valid_idempotency_key(header)) {
    detail = "Idempotency-Key must be 1-128 printable ASCII characters";
    return errc::invalid_request;
  }
  if (!req.idempotency_key.empty() && req.idempotency_key != header) {
    detail = "the Idempotency-Key header and the body's \"idempotency_key\" differ";
    return errc::invalid_request;
  }
  req.idempotency_key = std::string{header};
  return {};
}

std::string encode_publish_response(const std::vector<std::string>& channels,
                                    const std::vector<std::uint64_t>& offsets,
                                    const std::vector<std::string>& suppressed) {
  // ordered_json keeps the request order (json would sort the keys).
  nlohmann::ordered_json offs = nlohmann::ordered_json::object();
  nlohmann::ordered_json why = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < channels.size() && i < offsets.size(); ++i) {
    offs[channels[i]] = offsets[i];
    if (i < suppressed.size() && !suppressed[i].empty())
      why[channels[i]] = suppressed[i];
  }
  nlohmann::ordered_json out;
  out["offsets"] = std::move(offs);
  if (!why.empty())
    out["suppressed"] = std::move(why);
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

} // namespace herald::net::http
