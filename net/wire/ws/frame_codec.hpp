// WebSocket framing codec (pure): RFC 6455 section 5 frames on the open
// connection, after Beast has done the HTTP upgrade. Server frames are encoded
// once so that one frame can be shared by every subscriber; client frames are
// parsed incrementally from whatever the socket read. No Asio, no clock, no
// allocation per byte. No extension is negotiated (docs/protocol.md), so the
// RSV bits are 0 both ways.
#pragma once

#include "net/wire/ws/utf8.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace herald::net::ws {

/// Frame opcodes (RFC 6455 section 5.2); 3-7 and 11-15 are reserved.
enum class opcode : std::uint8_t {
  continuation = 0,
  text = 1,
  binary = 2,
  close = 8,
  ping = 9,
  pong = 10
};

// -- limits and close codes (RFC 6455 sections 5.2, 5.5, 7.4.1) ---------------

/// Largest header encode_header() writes: 2 bytes + 8-byte extended length.
inline constexpr std::size_t max_server_header_bytes = 10;
/// Largest payload of a control frame (section 5.5).
inline constexpr std::size_t max_control_payload_bytes = 125;
/// Largest close reason: the control payload minus the 2-byte code (section 5.5.1).
inline constexpr std::size_t max_close_reason_bytes = 123;

inline constexpr std::uint16_t close_normal = 1000;
inline constexpr std::uint16_t close_protocol_error = 1002;
inline constexpr std::uint16_t close_no_status = 1005; ///< received only: no code in the frame
inline constexpr std::uint16_t close_invalid_payload = 1007;
inline constexpr std::uint16_t close_policy_violation = 1008;
inline constexpr std::uint16_t close_too_big = 1009;

/// True for a code that may appear in a close frame on the wire (section 7.4):
/// 1000-1003, 1007-1014 (1012-1014 registered with IANA) and 3000-4999.
/// 1004 is reserved; 1005, 1006 and 1015 must never be sent.
bool is_valid_close_code(std::uint16_t code) noexcept;

// -- encoding server frames (RFC 6455 section 5.2: FIN set, unmasked) ----------

/// Writes the header of a whole (FIN set, unmasked, RSV 0) server frame for a
/// payload of `payload_bytes` bytes into `out`.
/// @param out at least max_server_header_bytes (10) bytes of room.
/// @pre payload_bytes < 2^63 (section 5.2: the top bit of a 64-bit length is 0).
/// @returns the header size in bytes: 2 (payload <= 125), 4 (<= 65535) or 10,
///          always the minimal length encoding.
std::size_t encode_header(opcode op, std::uint64_t payload_bytes, char* out) noexcept;

/// A whole unfragmented server frame: encode_header() + `payload`, in one
/// string of exactly that size. A control frame's `payload` must be <= 125
/// bytes (section 5.5; not checked). Throws only std::bad_alloc.
std::string encode_frame(opcode op, std::string_view payload);

/// The payload of a close frame (section 5.5.1): `code` in network byte order,
/// then the longest valid UTF-8 prefix of `reason` of at most 123 bytes: no
/// character cut in half, and never an invalid reason (which clients must
/// fail, section 8.1). @pre is_valid_close_code(code) (asserted).
std::string encode_close_payload(std::uint16_t code, std::string_view reason);

// -- parsing client frames (RFC 6455 sections 5.2-5.6) --------------------------

/// Incremental parser of client-to-server frames on one connection: feed it
/// whatever the socket read, in any split; it reports one event per call.
///
/// Enforced (error_code() in parentheses): frames masked (1002, section 5.1);
/// RSV2-3 zero, and RSV1 zero unless allow_compression() was called, and then
/// set only on a message's first frame (1002; RFC 7692 section 6: RSV1 marks
/// a compressed message, whose bytes the caller inflates and, for text,
/// checks as UTF-8 itself); no reserved opcode (1002); control frames
/// with FIN and a payload <= 125 bytes (1002, section 5.5); continuation only
/// inside a message, and no new text/binary frame inside one (1002, section
/// 5.4); a 64-bit length with its top bit clear (1002); a message, counted
/// across its fragments, of at most `max_message_bytes` (1009, decided from
/// the frame header, before any of the payload is read or buffered); text
/// messages valid UTF-8 (1007, checked as the bytes arrive, so a bad byte fails
/// at once, and a sequence cut by the end of the message fails at its end);
/// close payload not 1 byte long, with a valid code (1002) and a UTF-8 reason
/// (1007). Control frames may come between the fragments of a message.
///
/// Accepted although the sender "MUST" not: non-minimal length encodings
/// (e.g. 5 bytes sent with the 16-bit form). The length is unambiguous and the
/// size limit applies to the decoded value, so refusing them protects nothing.
///
/// Memory follows the bytes received, not the lengths announced: the message
/// buffer grows as payload arrives. A delivered message is released by
/// take_message(), or by the next parse() call (which keeps up to 1 KiB of
/// capacity), so an idle connection holds 120 bytes (sizeof, two empty strings).
/// A caller that stops calling parse() when its input runs out should use
/// take_message(). Single-threaded: one parser per connection, on its strand.
class frame_parser {
public:
  /// What parse() found. text/binary/ping/pong/close/error are events.
  enum class result : std::uint8_t { need_more, text, binary, ping, pong, close, error };

  /// @param max_message_bytes largest message (sum of its fragments' payloads,
  ///        bytes) accepted; a larger one fails with 1009.
  explicit frame_parser(std::size_t max_message_bytes) noexcept
    : max_message_bytes_(max_message_bytes) {}

  /// Consumes bytes of `in` up to and including the end of the next event, and
  /// sets `consumed` to how many (0 <= consumed <= in.size()); call again with
  /// the rest, `in.substr(consumed)`. Bytes of an incomplete frame are kept
  /// inside, so the caller never has to keep them.
  /// @returns
  /// - need_more: all of `in` was consumed and no event completed.
  /// - text / binary: message() holds the whole unmasked message (text is
  ///   valid UTF-8), until the next call to parse().
  /// - ping / pong: control_payload() holds the payload (<= 125 bytes), until
  ///   the next call.
  /// - close: the client's close frame (section 5.5.1): close_code() (1005 when
  ///   the frame had no payload) and close_reason().
  /// - error: error_code() is the close code to send (1002 protocol error,
  ///   1007 invalid UTF-8, 1009 message too big), error_text() a short reason;
  ///   `consumed` ends at or after the byte that revealed the fault. The rest
  ///   of the input is to be discarded.
  /// After close or error the parser stays there: every later call returns the
  /// same result with `consumed` 0. Throws only std::bad_alloc.
  result parse(std::string_view in, std::size_t& consumed);

  /// permessage-deflate was negotiated (RFC 7692): RSV1 may mark a message's
  /// first frame as compressed. Call before the first parse().
  void allow_compression() noexcept { compression_ = true; }
  /// After text/binary: the message's first frame had RSV1 set, so message()
  /// is the compressed payload (without the 0x00 0x00 0xff 0xff tail, RFC
  /// 7692 section 7.2.2), not checked as UTF-8.
  bool compressed() const noexcept { return message_compressed_; }

  /// After text/binary: the whole message, unmasked.
  std::string_view message() const noexcept { return message_; }
  /// After text/binary: moves the message out (no copy), leaving the parser
  /// with no buffer, which is what an idle connection wants.
  std::string take_message() noexcept;
  /// After ping/pong: the payload, unmasked. After close: the whole close payload.
  std::string_view control_payload() const noexcept { return control_; }
  /// After close: the code the client sent, or 1005 (close_no_status) if none.
  std::uint16_t close_code() const noexcept { return close_code_; }
  /// After close: the client's reason (valid UTF-8, <= 123 bytes; may be empty).
  std::string_view close_reason() const noexcept;
  /// After error: the close code to answer with (1002, 1007 or 1009).
  std::uint16_t error_code() const noexcept { return error_code_; }
  /// After error: a short static description (<= 123 bytes), for the close
  /// frame's reason and the logs.
  std::string_view error_text() const noexcept { return error_text_; }
  /// True between frames of no message: no frame header or payload has
  /// partly arrived and no fragmented message is open. False while a frame
  /// arrives or a message waits for its next fragment; a session bounds the
  /// time that lasts (--ws-message-timeout).
  bool at_rest() const noexcept { return !in_message_ && header_len_ == 0; }
  /// True once close or error was returned: the parser takes no more input.
  bool finished() const noexcept { return last_ == result::close || last_ == result::error; }

private:
  result on_header_byte() noexcept; // need_more, or error from what the header says so far
  result check_size(std::uint64_t payload_bytes) noexcept;
  std::uint64_t payload_length() const noexcept; // from the header's length fields
  void start_payload() noexcept;
  result end_of_frame();
  result fail(std::uint16_t code, const char* text) noexcept;
  void release_last_event() noexcept;

  std::size_t max_message_bytes_;
  std::string message_;         // the data message being assembled or delivered
  std::string control_;         // the control frame being assembled or delivered
  std::uint64_t remaining_ = 0; // payload bytes of the current frame still to read
  const char* error_text_ = "";
  std::uint8_t header_[14] = {};    // the current frame header, while it arrives
  std::uint8_t header_len_ = 0;     // bytes of header_ received
  std::uint8_t header_need_ = 2;    // its size, known from its second byte on
  std::uint8_t mask_phase_ = 0;     // masking key index of the next payload byte
  bool in_message_ = false;         // a text/binary message has started, not ended
  bool message_text_ = false;       // ...and it is text
  bool message_compressed_ = false; // ...and its first frame had RSV1 (permessage-deflate)
  bool compression_ = false;        // RSV1 allowed (allow_compression())
  utf8_validator utf8_;             // over the text message so far
  result last_ = result::need_more; // the last result returned
  std::uint16_t close_code_ = 0;
  std::uint16_t error_code_ = 0;
};

} // namespace herald::net::ws
