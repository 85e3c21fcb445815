// Fuzz target: client JSON (net/wire/json_input): the nesting limit holds for
// anything accepted, and what is accepted re-serialises to one line of JSON
// that parses back to the same value; nothing accepted names a key twice in
// one object (the keys the text holds are exactly the keys of the value).
#include "fuzz_check.hpp"

#include "net/wire/json_input.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

using namespace herald::net;

namespace {
// Depth without recursion (an object or array is one level).
std::size_t depth_of(const nlohmann::json& root) {
  std::size_t deepest = 0;
  std::vector<std::pair<const nlohmann::json*, std::size_t>> todo{{&root, 0}};
  while (!todo.empty()) {
    auto [j, d] = todo.back();
    todo.pop_back();
    if (!j->is_structured())
      continue;
    deepest = std::max(deepest, d + 1);
    for (const auto& child : *j)
      todo.emplace_back(&child, d + 1);
  }
  return deepest;
}

// Keys of every object in the value.
std::size_t keys_of(const nlohmann::json& root) {
  std::size_t n = 0;
  std::vector<const nlohmann::json*> todo{&root};
  while (!todo.empty()) {
    auto j = todo.back();
    todo.pop_back();
    if (j->is_object())
      n += j->size();
    if (j->is_structured())
      for (const auto& child : *j)
        todo.push_back(&child);
  }
  return n;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text{reinterpret_cast<const char*>(data), size};
  nlohmann::json value;
  if (!parse_client_json(text, value, 8))
    return 0;
  FUZZ_CHECK(depth_of(value) <= 8);
  std::size_t keys_in_text = 0;
  auto counted = nlohmann::json::parse(
    text.begin(), text.end(),
    [&](int, nlohmann::json::parse_event_t e, nlohmann::json&) {
      keys_in_text += e == nlohmann::json::parse_event_t::key;
      return true;
    },
    false);
  FUZZ_CHECK(!counted.is_discarded());
  FUZZ_CHECK(keys_in_text == keys_of(value));
  auto line = dump_compact(value);
  FUZZ_CHECK(line.find('\n') == std::string::npos && line.find('\r') == std::string::npos);
  nlohmann::json back;
  FUZZ_CHECK(parse_client_json(line, back, 8));
  // NaN cannot come from JSON text, so equality is well defined here.
  FUZZ_CHECK(back == value);
  return 0;
}
