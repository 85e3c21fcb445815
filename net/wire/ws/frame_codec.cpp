#include "net/wire/ws/frame_codec.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <utility>

namespace herald::net::ws {
namespace {

// A delivered message buffer up to this capacity is kept for the next message
// (client commands are a few hundred bytes); a larger one is released, so a
// connection that once sent a big message does not hold it while idle.
constexpr std::size_t kept_message_capacity = 1024;

bool is_control(std::uint8_t op) noexcept {
  return op >= 8;
}

// XORs `n` bytes at `p` with the masking key (section 5.3), starting at key
// index `phase`, 8 bytes at a time; returns the key index of the next byte.
std::uint8_t unmask(char* p, std::size_t n, const std::uint8_t* key, std::uint8_t phase) noexcept {
  std::uint8_t k[8];
  for (int i = 0; i < 8; ++i)
    k[i] = key[(phase + i) & 3];
  std::uint64_t k8;
  std::memcpy(&k8, k, 8);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    w ^= k8;
    std::memcpy(p + i, &w, 8);
  }
  for (; i < n; ++i) // k has period 4, so k[i & 7] is key[(phase + i) & 3]
    p[i] = static_cast<char>(p[i] ^ k[i & 7]);
  return static_cast<std::uint8_t>((phase + n) & 3);
}

} // namespace

bool is_valid_close_code(std::uint16_t code) noexcept {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
         (code >= 3000 && code <= 4999);
}

// -- encoding ------------------------------------------------------------------

std::size_t encode_header(opcode op, std::uint64_t payload_bytes, char* out) noexcept {
  assert(payload_bytes >> 63 == 0);
  out[0] = static_cast<char>(0x80 | static_cast<std::uint8_t>(op));
  if (payload_bytes <= 125) {
    out[1] = static_cast<char>(payload_bytes);
    return 2;
  }
  if (payload_bytes <= 0xFFFF) {
    out[1] = 126;
    out[2] = static_cast<char>(payload_bytes >> 8);
    out[3] = static_cast<char>(payload_bytes);
    return 4;
  }
  out[1] = 127;
  for (int i = 0; i < 8; ++i)
    out[2 + i] = static_cast<char>(payload_bytes >> (56 - 8 * i));
  return 10;
}

std::string encode_frame(opcode op, std::string_view payload) {
  char header[max_server_header_bytes];
  const std::size_t n = encode_header(op, payload.size(), header);
  std::string out;
  out.reserve(n + payload.size());
  return out.append(header, n).append(payload);
}

std::string encode_close_payload(std::uint16_t code, std::string_view reason) {
  assert(is_valid_close_code(code));
  std::string out{static_cast<char>(code >> 8), static_cast<char>(code & 0xFF)};
  return out.append(reason.data(), valid_utf8_prefix(reason, max_close_reason_bytes));
}

// -- parsing -------------------------------------------------------------------

std::string_view frame_parser::close_reason() const noexcept {
  return last_ == result::close && control_.size() > 2 ? std::string_view(control_).substr(2)
                                                       : std::string_view{};
}

frame_parser::result frame_parser::fail(std::uint16_t code, const char* text) noexcept {
  error_code_ = code;
  error_text_ = text;
  return result::error;
}

std::string frame_parser::take_message() noexcept {
  std::string out = std::move(message_);
  message_.clear(); // a moved-from string is only "valid": make it empty
  return out;
}

void frame_parser::release_last_event() noexcept {
  if (last_ == result::text || last_ == result::binary) {
    message_.clear();
    if (message_.capacity() > kept_message_capacity)
      std::string().swap(message_);
    utf8_.reset();
  } else if (last_ == result::ping || last_ == result::pong) {
    std::string().swap(control_);
  }
  last_ = result::need_more;
}

frame_parser::result frame_parser::check_size(std::uint64_t payload_bytes) noexcept {
  // Control payloads were bounded on the second byte. message_ holds the
  // earlier fragments of the message and never exceeds the limit.
  if (!is_control(header_[0] & 0x0F) && payload_bytes > max_message_bytes_ - message_.size())
    return fail(close_too_big, "message too big");
  return result::need_more;
}

// Called for each header byte as it arrives, so that a bad frame fails on the
// byte that shows it, before its payload is read. need_more: no fault so far.
frame_parser::result frame_parser::on_header_byte() noexcept {
  const std::uint8_t b0 = header_[0], op = b0 & 0x0F, len7 = header_[1] & 0x7F;
  switch (header_len_) {
  case 1:
    // RSV1 marks a compressed message (RFC 7692 section 6): only where
    // permessage-deflate was negotiated, and only on a message's first frame.
    if (b0 & 0x30)
      return fail(close_protocol_error, "reserved bits set");
    if (b0 & 0x40) {
      if (!compression_)
        return fail(close_protocol_error, "RSV1 set without a negotiated extension");
      if (is_control(op) || op == 0)
        return fail(close_protocol_error, "RSV1 set on a control or continuation frame");
    }
    if ((op >= 3 && op <= 7) || op >= 11)
      return fail(close_protocol_error, "reserved opcode");
    if (is_control(op) && !(b0 & 0x80))
      return fail(close_protocol_error, "fragmented control frame");
    if (op == 0 && !in_message_)
      return fail(close_protocol_error, "continuation frame without a message");
    if ((op == 1 || op == 2) && in_message_)
      return fail(close_protocol_error, "new message inside a fragmented one");
    break;
  case 2:
    if (!(header_[1] & 0x80))
      return fail(close_protocol_error, "unmasked client frame");
    if (is_control(op) && len7 > max_control_payload_bytes)
      return fail(close_protocol_error, "control frame payload over 125 bytes");
    header_need_ = static_cast<std::uint8_t>(2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + 4);
    if (len7 < 126)
      return check_size(len7);
    break;
  case 4:
    if (len7 == 126)
      return check_size(payload_length());
    break;
  case 10:
    if (len7 == 127 && (header_[2] & 0x80))
      return fail(close_protocol_error, "64-bit length with the top bit set");
    if (len7 == 127)
      return check_size(payload_length());
    break;
  }
  return result::need_more;
}

std::uint64_t frame_parser::payload_length() const noexcept {
  const std::uint8_t len7 = header_[1] & 0x7F;
  if (len7 < 126)
    return len7;
  std::uint64_t n = 0;
  for (int i = 2; i < (len7 == 126 ? 4 : 10); ++i)
    n = n << 8 | header_[i];
  return n;
}

void frame_parser::start_payload() noexcept {
  remaining_ = payload_length();
  mask_phase_ = 0;
  const std::uint8_t op = header_[0] & 0x0F;
  if (is_control(op)) {
    control_.clear();
  } else if (op != 0) {
    in_message_ = true;
    message_text_ = op == 1;
    message_compressed_ = (header_[0] & 0x40) != 0;
  }
}

frame_parser::result frame_parser::end_of_frame() {
  const std::uint8_t op = header_[0] & 0x0F;
  const bool fin = header_[0] & 0x80;
  header_len_ = 0;
  header_need_ = 2;
  switch (static_cast<opcode>(op)) {
  case opcode::ping:
    return result::ping;
  case opcode::pong:
    return result::pong;
  case opcode::close: // section 5.5.1: no payload, or a 2-byte code + UTF-8 reason
    if (control_.empty()) {
      close_code_ = close_no_status;
      return result::close;
    }
    if (control_.size() == 1)
      return fail(close_protocol_error, "close payload of 1 byte");
    close_code_ = static_cast<std::uint16_t>(static_cast<std::uint8_t>(control_[0]) << 8 |
                                             static_cast<std::uint8_t>(control_[1]));
    if (!is_valid_close_code(close_code_))
      return fail(close_protocol_error, "invalid close code");
    if (!is_valid_utf8(std::string_view(control_).substr(2)))
      return fail(close_invalid_payload, "invalid UTF-8 in close reason");
    return result::close;
  default: // data frame
    if (!fin)
      return result::need_more;
    in_message_ = false;
    if (message_text_ && !message_compressed_ && !utf8_.complete())
      return fail(close_invalid_payload, "invalid UTF-8 in text message");
    return message_text_ ? result::text : result::binary;
  }
}

frame_parser::result frame_parser::parse(std::string_view in, std::size_t& consumed) {
  consumed = 0;
  if (finished())
    return last_;
  release_last_event();
  std::size_t pos = 0;
  auto stop = [&](result r) { // need_more: input used up; else an event (close/error stick)
    consumed = pos;
    return r == result::need_more ? r : (last_ = r);
  };
  for (;;) {
    while (header_len_ < header_need_) {
      if (pos == in.size())
        return stop(result::need_more);
      header_[header_len_++] = static_cast<std::uint8_t>(in[pos++]);
      if (on_header_byte() == result::error)
        return stop(result::error);
      if (header_len_ == header_need_)
        start_payload();
    }
    // Payload: unmask in place where it lands, and validate text as it arrives.
    const auto take =
      static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, in.size() - pos));
    if (take > 0) {
      const bool control = is_control(header_[0] & 0x0F);
      std::string& dst = control ? control_ : message_;
      const std::size_t at = dst.size();
      dst.append(in.data() + pos, take);
      mask_phase_ = unmask(&dst[at], take, header_ + header_need_ - 4, mask_phase_);
      pos += take;
      remaining_ -= take;
      if (!control && message_text_ && !message_compressed_ &&
          !utf8_.feed(std::string_view(dst).substr(at)))
        return stop(fail(close_invalid_payload, "invalid UTF-8 in text message"));
    }
    if (remaining_ > 0)
      return stop(result::need_more);
    if (const result r = end_of_frame(); r != result::need_more)
      return stop(r);
  }
}

} // namespace herald::net::ws
