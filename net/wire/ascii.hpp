// ascii: case rules of ASCII text (URL schemes, HTTP header names), shared
// by every layer that compares such text. Pure and locale-independent.
#pragma once

#include <cstddef>
#include <string_view>

namespace herald::net {

/// `c` with 'A'..'Z' mapped to 'a'..'z'; every other byte (digits,
/// punctuation, non-ASCII) unchanged. No locale.
constexpr char ascii_lower(char c) noexcept {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

/// True iff `a` and `b` have the same length and are equal ignoring ASCII
/// case (ascii_lower); bytes outside 'A'..'Z' / 'a'..'z' must match exactly.
constexpr bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (ascii_lower(a[i]) != ascii_lower(b[i]))
      return false;
  return true;
}

} // namespace herald::net
