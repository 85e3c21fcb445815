// enum_names: the name of an enum value from a table of one name per value,
// for the enums whose names are static text (logs, metric labels, error
// messages). One table per enum instead of one switch per enum; the table's
// length is checked against the enum's first and last value at compile time.
#pragma once

#include <cstddef>
#include <string_view>
#include <type_traits>

namespace herald::net {

/// The name of `value` in `names`, which lists one name per value of an enum
/// numbered `First` to `Last` without holes, in declaration order: `names[0]`
/// is First's. Returns `fallback` for a value outside First..Last (a number
/// cast to the enum); never throws. A table whose length is not
/// Last - First + 1 does not compile, so a value added at the end of the enum
/// (and named Last) needs its name. The strings must outlive the result
/// (string literals do).
template <auto First, auto Last, std::size_t N>
constexpr std::string_view enum_name(decltype(First) value, const std::string_view (&names)[N],
                                     std::string_view fallback) noexcept {
  using E = decltype(First);
  static_assert(std::is_enum_v<E> && std::is_same_v<E, decltype(Last)>,
                "First and Last are values of one enum");
  using U = std::underlying_type_t<E>;
  static_assert(static_cast<U>(Last) >= static_cast<U>(First) &&
                  N == static_cast<std::size_t>(static_cast<U>(Last) - static_cast<U>(First)) + 1,
                "one name per value from First to Last");
  auto v = static_cast<U>(value);
  if (v < static_cast<U>(First) || v > static_cast<U>(Last))
    return fallback;
  return names[static_cast<std::size_t>(v - static_cast<U>(First))];
}

} // namespace herald::net
