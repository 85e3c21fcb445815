#include "net/wire/tags.hpp"

#include "net/wire/json_input.hpp"

#include <algorithm>

namespace herald::net {

bool read_tags(const nlohmann::json& value, event_tag_policy policy, publication_tags& out,
               std::string& event, std::string& detail) {
  if (!value.is_object()) {
    detail = "\"tags\" must be an object of strings";
    return false;
  }
  publication_tags tags;
  for (const auto& [key, v] : value.items()) {
    if (!v.is_string()) {
      detail = "\"tags." + key.substr(0, max_tag_key_bytes) +
               "\" must be a string (\"tags\" is an object of strings)";
      return false;
    }
    const auto& text = v.get_ref<const std::string&>();
    if (key == event_tag) {
      if (policy == event_tag_policy::refuse) {
        detail = "\"tags.event\" is not allowed: the event name is the body's \"event\", "
                 "which filters see as the tag \"event\"";
        return false;
      }
      event = text;
      continue;
    }
    if (key.empty() || key.size() > max_tag_key_bytes) {
      detail = "a tag key must be 1-" + std::to_string(max_tag_key_bytes) + " bytes";
      return false;
    }
    if (text.size() > max_tag_value_bytes) {
      detail = "\"tags." + key + "\" is longer than " + std::to_string(max_tag_value_bytes) +
               " bytes";
      return false;
    }
    if (tags.size() == max_tags) {
      detail = "at most " + std::to_string(max_tags) + " tags besides \"event\"";
      return false;
    }
    tags.emplace_back(key, text);
  }
  // nlohmann::json keeps object keys sorted and distinct already; sorting
  // again keeps the invariant independent of the JSON type used.
  std::sort(tags.begin(), tags.end());
  out = std::move(tags);
  return true;
}

std::string tags_json(const publication_tags& tags) {
  if (tags.empty())
    return {};
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : tags)
    j[k] = v;
  return dump_compact(j);
}

void append_tag_members(std::string& out, const publication_tags& tags) {
  bool first = true;
  for (const auto& [k, v] : tags) {
    if (!first)
      out += ',';
    first = false;
    out += dump_compact(nlohmann::json(k));
    out += ':';
    out += dump_compact(nlohmann::json(v));
  }
}

const std::string* find_tag(const publication_tags& tags, std::string_view key) noexcept {
  for (const auto& [k, v] : tags)
    if (k == key)
      return &v;
  return nullptr;
}

} // namespace herald::net
