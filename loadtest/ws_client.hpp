// Client side of RFC 6455 WebSocket, as pure codecs (no I/O): the upgrade
// request, the check of the server's 101 answer, masked client frames, and
// an incremental decoder of server frames. permessage-deflate (RFC 7692) is
// offered on request and then inflated (zlib), no context takeover.
#pragma once

#include "net/wire/ws/frame_codec.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace herald::loadtest::ws {

/// WebSocket opcodes (RFC 6455 section 5.2): the server's own enum.
using opcode = net::ws::opcode;

/// The HTTP/1.1 upgrade request for `path` on `host` ("host:port") with the
/// base64 `key` (16 random bytes encoded, see make_key); with `deflate` it
/// offers permessage-deflate (`Sec-WebSocket-Extensions`).
std::string make_upgrade_request(std::string_view host, std::string_view path,
                                 std::string_view key, bool deflate = false);

/// Inflates one permessage-deflate message (RFC 7692 section 7.2.2: the
/// 0x00 0x00 0xff 0xff tail appended) into `out`. False when the bytes are
/// not DEFLATE.
bool inflate_message(std::string_view compressed, std::string& out);

/// A Sec-WebSocket-Key: base64 of the 16 bytes of `a` and `b`.
std::string make_key(std::uint64_t a, std::uint64_t b);

/// The Sec-WebSocket-Accept a server must answer to `key`:
/// base64(SHA-1(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")).
std::string accept_for_key(std::string_view key);

/// Appends one complete (FIN) client frame, masked with `mask` as RFC 6455
/// requires of clients, to `out`.
void append_client_frame(std::string& out, opcode op, std::string_view payload, std::uint32_t mask);

/// Base64 (RFC 4648, with padding) of `n` bytes.
std::string base64(const void* data, std::size_t n);

/// Incremental decoder of server-to-client frames. Fragmented messages are
/// reassembled; control frames may come between fragments. Only an
/// incomplete frame is buffered.
class frame_decoder {
public:
  /// Largest message accepted (bytes); above it the decoder fails.
  explicit frame_decoder(std::size_t max_message = 16 * 1024 * 1024)
    : max_message_(max_message) {}

  /// Decodes `n` bytes at `p`, calling `on_message(opcode, std::string_view)`
  /// for each complete data message (text or binary, reassembled) and each
  /// control frame (close, ping, pong). Returns false, with error() set,
  /// on a protocol violation (masked server frame, reserved bits, unknown
  /// opcode, bad continuation, oversize or fragmented control frame); the
  /// caller must then drop the connection.
  template <class OnMessage>
  bool feed(const char* p, std::size_t n, OnMessage&& on_message) {
    if (!buf_.empty()) {
      buf_.append(p, n);
      std::size_t used = 0;
      bool ok = parse(buf_.data(), buf_.size(), used, on_message);
      buf_.erase(0, used);
      return ok;
    }
    std::size_t used = 0;
    bool ok = parse(p, n, used, on_message);
    if (ok && used < n)
      buf_.assign(p + used, n - used);
    return ok;
  }

  /// The server accepted permessage-deflate: RSV1 marks a compressed
  /// message, inflated before on_message sees it.
  void allow_deflate() noexcept { deflate_ = true; }

  /// What went wrong when feed returned false.
  const char* error() const noexcept { return error_; }
  /// Forgets any partial frame or message.
  void reset() noexcept;
  /// Heap bytes held by the decoder's buffers.
  std::size_t capacity_bytes() const noexcept {
    return buf_.capacity() + message_.capacity() + inflated_.capacity();
  }

private:
  struct header {
    bool fin;
    bool rsv1; ///< permessage-deflate: a compressed message's first frame
    opcode op;
    std::size_t header_size;
    std::uint64_t payload_size;
  };
  // Parses a frame header at p (n bytes): 1 complete, 0 incomplete, -1 error.
  int parse_header(const unsigned char* p, std::size_t n, header& h);

  template <class OnMessage>
  bool parse(const char* data, std::size_t n, std::size_t& used, OnMessage& on_message) {
    auto* p = reinterpret_cast<const unsigned char*>(data);
    while (used < n) {
      header h{};
      int r = parse_header(p + used, n - used, h);
      if (r < 0)
        return false;
      if (r == 0 || n - used - h.header_size < h.payload_size)
        return true; // incomplete frame: wait for more bytes
      std::string_view payload(data + used + h.header_size,
                               static_cast<std::size_t>(h.payload_size));
      used += h.header_size + static_cast<std::size_t>(h.payload_size);
      if (static_cast<std::uint8_t>(h.op) >= 0x8) {
        on_message(h.op, payload);
        continue;
      }
      if (h.op == opcode::continuation) {
        if (!in_message_)
          return fail("continuation frame without a message");
        if (message_.size() + payload.size() > max_message_)
          return fail("message too big");
        message_.append(payload);
        if (h.fin) {
          in_message_ = false;
          if (!deliver(message_op_, message_compressed_, std::string_view{message_}, on_message))
            return false;
          message_.clear();
        }
        continue;
      }
      if (in_message_)
        return fail("new message inside a fragmented one");
      if (h.fin) {
        if (!deliver(h.op, h.rsv1, payload, on_message))
          return false;
      } else {
        in_message_ = true;
        message_op_ = h.op;
        message_compressed_ = h.rsv1;
        message_.assign(payload);
      }
    }
    return true;
  }

  template <class OnMessage>
  bool deliver(opcode op, bool compressed, std::string_view payload, OnMessage& on_message) {
    if (!compressed) {
      on_message(op, payload);
      return true;
    }
    if (!inflate_message(payload, inflated_))
      return fail("bad compressed message");
    on_message(op, std::string_view{inflated_});
    return true;
  }

  bool fail(const char* why) noexcept {
    error_ = why;
    return false;
  }

  std::size_t max_message_;
  std::string buf_;     // incomplete frame carried over between reads
  std::string message_; // fragments of the message being reassembled
  std::string inflated_; // the last compressed message, inflated
  opcode message_op_ = opcode::text;
  bool in_message_ = false;
  bool message_compressed_ = false;
  bool deflate_ = false;
  const char* error_ = "";
};

} // namespace herald::loadtest::ws
