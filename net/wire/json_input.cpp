#include "net/wire/json_input.hpp"

#include <algorithm>

#include <unordered_set>
#include <vector>

namespace herald::net {

namespace {

// Depth of the deepest array/object in `text`, stopping early past `limit`.
// Brackets inside strings do not count.
std::size_t nesting_depth(std::string_view text, std::size_t limit) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
    case '"':
      in_string = true;
      break;
    case '[':
    case '{':
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > limit)
          return deepest;
      }
      break;
    case ']':
    case '}':
      if (depth > 0)
        --depth;
      break;
    default:
      break;
    }
  }
  return deepest;
}

// "not valid JSON at byte N: <what nlohmann says>", without its
// "[json.exception.parse_error.101] parse error at line 1, column 5: " head.
std::string syntax_error_text(const nlohmann::json::parse_error& e) {
  std::string_view what = e.what();
  if (auto at = what.find(": "); at != std::string_view::npos)
    what.remove_prefix(at + 2);
  constexpr std::size_t most = 200; // "last read: '...'" echoes the input
  std::string out = "not valid JSON at byte " + std::to_string(e.byte) + ": ";
  out.append(what.substr(0, most));
  if (what.size() > most)
    out += "...";
  return out;
}

} // namespace

bool parse_client_json(std::string_view text, nlohmann::json& out, std::size_t max_depth,
                       std::string* error) {
  if (nesting_depth(text, max_depth) > max_depth) {
    if (error)
      *error = std::string{nested_too_deep} + std::to_string(max_depth);
    return false;
  }
  // The keys of each open object, innermost last (depth is bounded above).
  std::vector<std::unordered_set<std::string>> open;
  std::string duplicate;
  bool repeated = false;
  auto check = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using ev = nlohmann::json::parse_event_t;
    switch (event) {
    case ev::object_start:
      open.emplace_back();
      break;
    case ev::object_end:
      if (!open.empty())
        open.pop_back();
      break;
    case ev::key:
      if (!open.empty() && !open.back().insert(parsed.get<std::string>()).second && !repeated) {
        repeated = true;
        duplicate = parsed.get<std::string>();
      }
      break;
    default:
      break;
    }
    return true;
  };
  try {
    out = nlohmann::json::parse(text.begin(), text.end(), check, true);
  } catch (const nlohmann::json::parse_error& e) {
    out = nlohmann::json{};
    if (error)
      *error = syntax_error_text(e);
    return false;
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond a double's range (406 "number overflow parsing '1e400'"):
    // the parser gives no position, so the reason names the number.
    out = nlohmann::json{};
    if (error) {
      std::string_view what = e.what();
      if (auto at = what.find("] "); at != std::string_view::npos)
        what.remove_prefix(at + 2);
      *error = "not valid JSON: " + std::string{what.substr(0, 200)} +
               " (a number beyond the range of a double)";
    }
    return false;
  } catch (const std::exception&) { // bad_alloc, or any other parser refusal
    out = nlohmann::json{};
    if (error)
      *error = "not valid JSON";
    return false;
  }
  if (repeated) {
    out = nlohmann::json{};
    if (error)
      *error = "duplicate key \"" + dump_compact(duplicate).substr(1);
    return false;
  }
  return true;
}

std::string unknown_field(const nlohmann::json& doc, const std::string_view* known,
                          std::size_t known_count) {
  if (!doc.is_object())
    return {};
  const auto* end = known + known_count;
  for (const auto& item : doc.items()) {
    const auto& key = item.key();
    if (std::find(known, end, key) != end)
      continue;
    constexpr std::size_t shown = 64; // a key may be as long as the input
    std::string detail = "unknown field " +
                         dump_compact(key.size() > shown ? key.substr(0, shown) + "..." : key) +
                         " (known:";
    for (const auto* k = known; k != end; ++k) {
      detail += ' ';
      detail += *k;
    }
    detail += ')';
    return detail;
  }
  return {};
}

std::string dump_compact(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool is_valid_event_name(std::string_view event) noexcept {
  if (event.empty() || event.size() > 64)
    return false;
  if (event.substr(0, 7) == "herald.")
    return false;
  for (char c : event) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == ':' || c == '-';
    if (!ok)
      return false;
  }
  return true;
}

} // namespace herald::net
