#include "loadtest/ws_client.hpp"

#include <zlib.h>

#include <array>
#include <cstring>

namespace herald::loadtest::ws {

namespace {

constexpr char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

inline std::uint32_t rol(std::uint32_t v, unsigned n) {
  return (v << n) | (v >> (32 - n));
}

// SHA-1 (FIPS 180-4) of a short message; only used for the handshake check.
std::array<std::uint8_t, 20> sha1(std::string_view msg) {
  std::uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  std::string m(msg);
  std::uint64_t bits = static_cast<std::uint64_t>(msg.size()) * 8;
  m.push_back(static_cast<char>(0x80));
  while (m.size() % 64 != 56)
    m.push_back('\0');
  for (int i = 7; i >= 0; --i)
    m.push_back(static_cast<char>((bits >> (i * 8)) & 0xff));
  for (std::size_t off = 0; off < m.size(); off += 64) {
    std::uint32_t w[80];
    for (int i = 0; i < 16; ++i) {
      auto b = [&](int k) {
        return static_cast<std::uint32_t>(static_cast<unsigned char>(m[off + i * 4 + k]));
      };
      w[i] = (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
    }
    for (int i = 16; i < 80; ++i)
      w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; ++i) {
      std::uint32_t f, k;
      if (i < 20) {
        f = (b & c) | (~b & d);
        k = 0x5A827999;
      } else if (i < 40) {
        f = b ^ c ^ d;
        k = 0x6ED9EBA1;
      } else if (i < 60) {
        f = (b & c) | (b & d) | (c & d);
        k = 0x8F1BBCDC;
      } else {
        f = b ^ c ^ d;
        k = 0xCA62C1D6;
      }
      std::uint32_t t = rol(a, 5) + f + e + k + w[i];
      e = d;
      d = c;
      c = rol(b, 30);
      b = a;
      a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
  }
  std::array<std::uint8_t, 20> out{};
  for (int i = 0; i < 5; ++i)
    for (int k = 0; k < 4; ++k)
      out[static_cast<std::size_t>(i * 4 + k)] = static_cast<std::uint8_t>(h[i] >> (24 - 8 * k));
  return out;
}

} // namespace

std::string base64(const void* data, std::size_t n) {
  auto* p = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (std::size_t i = 0; i < n; i += 3) {
    std::uint32_t v = static_cast<std::uint32_t>(p[i]) << 16;
    if (i + 1 < n)
      v |= static_cast<std::uint32_t>(p[i + 1]) << 8;
    if (i + 2 < n)
      v |= p[i + 2];
    out.push_back(b64_alphabet[(v >> 18) & 63]);
    out.push_back(b64_alphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < n ? b64_alphabet[(v >> 6) & 63] : '=');
    out.push_back(i + 2 < n ? b64_alphabet[v & 63] : '=');
  }
  return out;
}

std::string make_key(std::uint64_t a, std::uint64_t b) {
  unsigned char raw[16];
  std::memcpy(raw, &a, 8);
  std::memcpy(raw + 8, &b, 8);
  return base64(raw, sizeof raw);
}

std::string accept_for_key(std::string_view key) {
  std::string s(key);
  s += "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  auto digest = sha1(s);
  return base64(digest.data(), digest.size());
}

std::string make_upgrade_request(std::string_view host, std::string_view path,
                                 std::string_view key, bool deflate) {
  std::string out;
  out.reserve(160 + host.size() + path.size());
  out += "GET ";
  out += path;
  out += " HTTP/1.1\r\nHost: ";
  out += host;
  out += "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ";
  out += key;
  out += "\r\nSec-WebSocket-Version: 13\r\n";
  if (deflate)
    out += "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n";
  out += "\r\n";
  return out;
}

void append_client_frame(std::string& out, opcode op, std::string_view payload,
                         std::uint32_t mask) {
  out.push_back(static_cast<char>(0x80 | static_cast<std::uint8_t>(op)));
  auto n = payload.size();
  if (n < 126) {
    out.push_back(static_cast<char>(0x80 | n));
  } else if (n <= 0xffff) {
    out.push_back(static_cast<char>(0x80 | 126));
    out.push_back(static_cast<char>((n >> 8) & 0xff));
    out.push_back(static_cast<char>(n & 0xff));
  } else {
    out.push_back(static_cast<char>(0x80 | 127));
    for (int i = 7; i >= 0; --i)
      out.push_back(static_cast<char>((static_cast<std::uint64_t>(n) >> (i * 8)) & 0xff));
  }
  unsigned char key[4] = {static_cast<unsigned char>(mask >> 24),
                          static_cast<unsigned char>(mask >> 16),
                          static_cast<unsigned char>(mask >> 8), static_cast<unsigned char>(mask)};
  out.append(reinterpret_cast<const char*>(key), 4);
  auto start = out.size();
  out.append(payload);
  for (std::size_t i = 0; i < n; ++i)
    out[start + i] = static_cast<char>(static_cast<unsigned char>(out[start + i]) ^ key[i % 4]);
}

int frame_decoder::parse_header(const unsigned char* p, std::size_t n, header& h) {
  if (n < 2)
    return 0;
  auto op = p[0] & 0x0f;
  if ((p[0] & 0x30) || ((p[0] & 0x40) && (!deflate_ || op == 0 || op >= 0x8)))
    return fail("reserved bits set"), -1;
  h.rsv1 = (p[0] & 0x40) != 0;
  if (op != 0x0 && op != 0x1 && op != 0x2 && op != 0x8 && op != 0x9 && op != 0xA)
    return fail("unknown opcode"), -1;
  if (p[1] & 0x80)
    return fail("masked server frame"), -1;
  h.fin = (p[0] & 0x80) != 0;
  h.op = static_cast<opcode>(op);
  std::uint64_t len = p[1] & 0x7f;
  std::size_t hs = 2;
  if (len == 126) {
    if (n < 4)
      return 0;
    len = (static_cast<std::uint64_t>(p[2]) << 8) | p[3];
    hs = 4;
  } else if (len == 127) {
    if (n < 10)
      return 0;
    len = 0;
    for (int i = 0; i < 8; ++i)
      len = (len << 8) | p[2 + i];
    hs = 10;
  }
  if (op >= 0x8 && (!h.fin || len > 125))
    return fail("bad control frame"), -1;
  if (len > max_message_)
    return fail("message too big"), -1;
  h.header_size = hs;
  h.payload_size = len;
  return 1;
}

bool inflate_message(std::string_view compressed, std::string& out) {
  // The client side of a benchmark: a fresh stream per message (the server
  // answers client_no_context_takeover's counterpart, server_no_context_takeover).
  z_stream z{};
  if (inflateInit2(&z, -15) != Z_OK)
    return false;
  std::string in{compressed};
  in.append("\x00\x00\xff\xff", 4);
  z.next_in = reinterpret_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  out.clear();
  char chunk[16384];
  int rc = Z_OK;
  while (rc == Z_OK && (z.avail_in > 0 || z.avail_out == 0)) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    rc = inflate(&z, Z_SYNC_FLUSH);
    out.append(chunk, sizeof chunk - z.avail_out);
  }
  inflateEnd(&z);
  return rc == Z_OK || rc == Z_STREAM_END || (rc == Z_BUF_ERROR && z.avail_in == 0);
}

void frame_decoder::reset() noexcept {
  buf_.clear();
  message_.clear();
  in_message_ = false;
  error_ = "";
}

} // namespace herald::loadtest::ws
