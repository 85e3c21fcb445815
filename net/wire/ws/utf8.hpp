// utf8_validator: incremental UTF-8 validation (RFC 3629 section 4), pure.
// Feed it a text message in pieces (WebSocket fragments, or the bytes of one
// fragment as they arrive): it fails on the first byte that cannot start or
// continue a well-formed sequence, so a bad byte is caught without waiting for
// the rest of the message (RFC 6455 section 8.1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace herald::net::ws {

class utf8_validator {
public:
  /// Validates the next `bytes` of the text (any split: a sequence may start in
  /// one call and end in the next). Rejects overlong forms, surrogates
  /// U+D800..U+DFFF, code points above U+10FFFF and stray continuation bytes.
  /// @returns false from the first invalid byte on, and keeps returning false
  ///          until reset().
  bool feed(std::string_view bytes) noexcept;

  /// True when the text fed so far is valid and ends on a character boundary,
  /// i.e. it is a complete UTF-8 text (check this at the end of a message:
  /// a truncated sequence is invalid there).
  bool complete() const noexcept { return !failed_ && need_ == 0; }

  /// False once an invalid byte was seen.
  bool ok() const noexcept { return !failed_; }

  /// Forgets everything: ready for a new text.
  void reset() noexcept { *this = utf8_validator{}; }

private:
  std::uint8_t need_ = 0;  // continuation bytes still expected
  std::uint8_t lo_ = 0x80; // range allowed for the next continuation byte
  std::uint8_t hi_ = 0xBF; // (narrower after E0, ED, F0, F4)
  bool failed_ = false;
};

/// True when `text` is a complete, valid UTF-8 text (RFC 3629).
bool is_valid_utf8(std::string_view text) noexcept;

/// The length in bytes of the longest prefix of `text` that is at most
/// `max_bytes` long and is valid UTF-8 ending on a character boundary
/// (used to truncate a reason without cutting a character in half).
std::size_t valid_utf8_prefix(std::string_view text, std::size_t max_bytes) noexcept;

} // namespace herald::net::ws
