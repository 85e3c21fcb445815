#include "net/wire/channel_class.hpp"

#include "net/wire/channel_name.hpp"

#include <algorithm>
#include <charconv>

namespace herald::net {

namespace {

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

bool stream_id_char(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '.' || c == '-';
}

bool strkey_char(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= '2' && c <= '7');
}

// A pattern within Herald's channel rules (see channel_classes::parse).
bool valid_pattern(std::string_view p) noexcept {
  if (p == "*")
    return true;
  if (p.back() != '*')
    return !validate_channel(p);
  auto prefix = p.substr(0, p.size() - 1);
  auto rest_ok = [&](std::string_view head, bool (*ok)(char), std::size_t max) {
    if (prefix.substr(0, head.size()) != head)
      return false;
    auto rest = prefix.substr(head.size());
    return rest.size() < max && std::all_of(rest.begin(), rest.end(), ok);
  };
  return rest_ok("stream:", stream_id_char, max_stream_id_length) ||
         rest_ok("user:", strkey_char, 56);
}

bool read_number(std::string_view v, std::size_t& out) noexcept {
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc{} && ptr == v.data() + v.size() && out > 0;
}

// Applies one `key=value` to `c`; an error message, or empty.
std::string apply(channel_class& c, std::string_view setting) {
  auto eq = setting.find('=');
  if (eq == std::string_view::npos)
    return "setting \"" + std::string(setting) + "\" is not key=value";
  auto key = setting.substr(0, eq);
  auto value = setting.substr(eq + 1);
  std::size_t n = 0;
  if (key == "history-size") {
    if (!read_number(value, n) || n > 1'000'000)
      return "history-size must be 1-1000000";
    c.history_size = n;
  } else if (key == "history-ttl") {
    if (!read_number(value, n) || n > 366 * 86'400)
      return "history-ttl must be 1-31622400 seconds";
    c.history_ttl = std::chrono::seconds(n);
  } else if (key == "recovery") {
    if (value != "stream" && value != "cache")
      return "recovery must be stream or cache";
    c.recovery = value == "cache" ? recovery_mode::cache : recovery_mode::stream;
  } else if (key == "overflow") {
    if (value != "close" && value != "conflate")
      return "overflow must be close or conflate";
    c.overflow = value == "conflate" ? overflow_policy::conflate : overflow_policy::close;
  } else if (key == "delta") {
    if (value != "allowed" && value != "refused")
      return "delta must be allowed or refused";
    c.delta = value == "allowed";
  } else {
    return "unknown class option \"" + std::string(key) +
           "\" (history-size, history-ttl, recovery, overflow, delta)";
  }
  return {};
}

} // namespace

channel_classes::channel_classes(std::size_t history_size, std::chrono::seconds history_ttl) {
  default_.pattern = "*";
  default_.history_size = history_size;
  default_.history_ttl = history_ttl;
}

std::optional<channel_classes> channel_classes::parse(std::string_view text,
                                                      std::size_t history_size,
                                                      std::chrono::seconds history_ttl,
                                                      std::string& error) {
  channel_classes out(history_size, history_ttl);
  // Each class as written: its pattern and its settings.
  std::vector<std::pair<std::string_view, std::vector<std::string_view>>> parsed;
  while (!text.empty()) {
    auto semi = text.find(';');
    auto one = trim(text.substr(0, semi));
    text = semi == std::string_view::npos ? std::string_view{} : text.substr(semi + 1);
    if (one.empty())
      continue;
    std::vector<std::string_view> words;
    while (!one.empty()) {
      auto sp = one.find_first_of(" \t\n");
      words.push_back(one.substr(0, sp));
      one = sp == std::string_view::npos ? std::string_view{} : trim(one.substr(sp));
    }
    auto pattern = words.front();
    if (!valid_pattern(pattern)) {
      error = "class pattern \"" + std::string(pattern) +
              "\" is not a channel name, a prefix of one ending in * (stream:..., user:...), "
              "or *";
      return std::nullopt;
    }
    for (const auto& [p, s] : parsed)
      if (p == pattern) {
        error = "class pattern \"" + std::string(pattern) + "\" is listed twice";
        return std::nullopt;
      }
    words.erase(words.begin());
    // A key given twice in one class would silently keep the last value.
    for (std::size_t i = 0; i < words.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (words[i].substr(0, words[i].find('=')) == words[j].substr(0, words[j].find('='))) {
          error = "class " + std::string(pattern) + ": key \"" +
                  std::string(words[i].substr(0, words[i].find('='))) + "\" is given twice (" +
                  std::string(words[j]) + ", " + std::string(words[i]) + ")";
          return std::nullopt;
        }
    parsed.emplace_back(pattern, std::move(words));
  }
  // The default class first, so that the others start from it.
  for (const auto& [pattern, settings] : parsed) {
    if (pattern != "*")
      continue;
    for (auto s : settings)
      if (auto msg = apply(out.default_, s); !msg.empty()) {
        error = "class *: " + msg;
        return std::nullopt;
      }
  }
  for (const auto& [pattern, settings] : parsed) {
    if (pattern == "*")
      continue;
    channel_class c = out.default_;
    c.pattern = std::string(pattern);
    for (auto s : settings)
      if (auto msg = apply(c, s); !msg.empty()) {
        error = "class " + c.pattern + ": " + msg;
        return std::nullopt;
      }
    out.classes_.push_back(std::move(c));
  }
  return out;
}

const channel_class& channel_classes::of(std::string_view channel) const noexcept {
  const channel_class* best = nullptr;
  std::size_t best_length = 0;
  for (const auto& c : classes_) {
    const std::string_view p = c.pattern;
    if (p.back() != '*') {
      if (p == channel)
        return c; // an exact name beats every prefix
      continue;
    }
    auto prefix = p.substr(0, p.size() - 1);
    if (channel.substr(0, prefix.size()) == prefix && (!best || prefix.size() > best_length)) {
      best = &c;
      best_length = prefix.size();
    }
  }
  return best ? *best : default_;
}

} // namespace herald::net
