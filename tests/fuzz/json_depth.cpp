// Fuzz target: client JSON (net/json_input): the nesting limit holds for
// anything accepted, and what is accepted re-serialises to one line of JSON
// that parses back to the same value.
#include "fuzz_check.hpp"

#include "net/json_input.hpp"

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
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text{reinterpret_cast<const char*>(data), size};
  nlohmann::json value;
  if (!parse_client_json(text, value, 8))
    return 0;
  FUZZ_CHECK(depth_of(value) <= 8);
  auto line = dump_compact(value);
  FUZZ_CHECK(line.find('\n') == std::string::npos && line.find('\r') == std::string::npos);
  nlohmann::json back;
  FUZZ_CHECK(parse_client_json(line, back, 8));
  // NaN cannot come from JSON text, so equality is well defined here.
  FUZZ_CHECK(back == value);
  return 0;
}
