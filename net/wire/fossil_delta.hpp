// Fossil deltas: the delta compression Centrifugo (v5.4+) applies to a
// channel's publications (`delta: "fossil"` on a subscription), where each
// publication after the first may travel as a delta against the previous one
// and every official SDK decodes it.
//
// The format is fossil-scm's "Fossil Delta Format"
// (https://fossil-scm.org/home/doc/trunk/www/delta_format.wiki):
//
//     <target length>\n
//     <count>@<offset>,        copy `count` bytes of the source from `offset`
//     <count>:<bytes>          insert the next `count` bytes of the delta
//     ...
//     <checksum>;              32-bit checksum of the target, then the end
//
// Integers are unsigned, written most significant digit first in the
// format's base 64 (digits `0-9`, `A-Z`, `_`, `a-z`, `~`, values 0 to 63).
// The checksum is the sum, modulo 2^32, of the target read as big-endian
// 32-bit words, a last partial word padded with zero bytes on the right.
//
// Pure functions of their arguments (net/wire/README.md): reentrant, any
// thread, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace herald::net::fossil {

// -- encoding ----------------------------------------------------------------

/// Builds a delta that turns `source` into `target` (both arbitrary bytes).
///
/// Follows the format's own encoder ("Fossil Delta Encoding Algorithm",
/// https://fossil-scm.org/home/doc/trunk/www/delta_encoder_algorithm.wiki):
/// the source is hashed in aligned 16-byte blocks, a rolling hash slides over
/// the target, and each block found there is extended both ways into the
/// longest copy; bytes no copy covers are inserted literally. The start and
/// the end the two values share are copied too, however short (the scan sees
/// only whole blocks, and a JSON object's first and last fields are often
/// within 16 bytes of a change). A copy is written only when it is shorter
/// than the bytes it stands for, so a delta is at most 21 bytes longer than
/// `target` (header, one insert, checksum). A 2 KiB JSON object with one to
/// three fields changed gives a delta of 22 to 64 bytes
/// (tests/wire/fossil_delta.cpp).
/// Cost: one pass over each input, each target position trying at most 64
/// source blocks with its hash (about 2 us for 2 KiB); scratch of about
/// `source / 2` bytes.
///
/// No copy begins or ends inside a UTF-8 sequence of `target` (a byte
/// 0x80-0xBF never starts or follows a copy), so every insert starts and
/// ends on a character boundary: when `target` is valid UTF-8, the delta is
/// valid UTF-8 too. Centrifugo's JSON protocol carries a delta as a JSON
/// string, which the SDKs encode back to UTF-8 before decoding it.
///
/// @param source the previous value (bytes), at most 2^32 - 1 of them.
/// @param target the new value (bytes), at most 2^32 - 1 of them.
/// @returns the delta; `apply(source, delta, n)` gives `target` back for any
///          `n >= target.size()`. Never fails; allocates only the result and
///          its scratch tables (std::bad_alloc as any std::string).
std::string create(std::string_view source, std::string_view target);

// -- decoding ----------------------------------------------------------------

/// Why `apply` refused a delta.
enum class apply_error : std::uint8_t {
  none,                ///< no error
  bad_integer,         ///< no base-64 digit where an integer belongs, or a value above 2^32 - 1
  missing_newline,     ///< the target length is not followed by '\n'
  target_too_large,    ///< the header announces more than `max_target_bytes`
  unknown_command,     ///< an integer followed by something else than '@', ':' or ';'
  copy_not_terminated, ///< a copy's offset is not followed by ','
  copy_past_source,    ///< a copy reads beyond the end of the source
  literal_past_end,    ///< an insert counts more bytes than the delta has left
  output_overflow,     ///< the commands give more bytes than the header announced
  size_mismatch,       ///< the target is shorter than the header announced
  bad_checksum,        ///< the target's checksum is not the one the delta carries
  unterminated,        ///< the delta ends before its checksum command
  trailing_bytes,      ///< bytes after the checksum command
};

/// A short English description of `e` (static text), for logs and errors.
std::string_view describe(apply_error e) noexcept;

/// What `apply` returns: the target, or why there is none.
struct apply_result {
  std::optional<std::string> target; ///< the rebuilt target; empty when refused
  apply_error error = apply_error::none;
  std::size_t error_at = 0; ///< byte offset in the delta where the error was found

  /// True when the delta was applied (`target` holds the result).
  explicit operator bool() const noexcept { return target.has_value(); }
};

/// Applies `delta` (the format above) to `source` and returns the target.
///
/// Validates every command against the sizes: integers must have at least
/// one digit and fit in 32 bits; copies must lie inside `source`; inserts
/// inside `delta`; the commands must produce exactly the announced length and
/// the target must match the checksum (which this function always checks),
/// and nothing may follow it. A header announcing more than
/// `max_target_bytes` is refused before anything is allocated; otherwise the
/// result is allocated once, at the announced size. Never reads outside its
/// arguments and never throws on any input (std::bad_alloc aside).
///
/// Stricter than the reference decoder in two ways that the reference
/// encoder (and `create`) never trips, as it writes zero as "0" and ends the
/// delta at the checksum: an integer needs at least one digit, and bytes
/// after the checksum are refused.
///
/// @param source the value the delta was made against (bytes).
/// @param delta the delta (bytes), e.g. from a publication's data.
/// @param max_target_bytes the largest target accepted (bytes).
/// @returns the target, or `apply_error` and the offset in `delta` where the
///          delta was found wrong (`describe()` names it).
apply_result apply(std::string_view source, std::string_view delta, std::size_t max_target_bytes);

/// The format's checksum of `bytes` (see the top of this file); exposed for
/// tests and for clients that check a target rebuilt elsewhere.
std::uint32_t checksum(std::string_view bytes) noexcept;

} // namespace herald::net::fossil
