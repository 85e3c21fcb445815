#include "net/wire/ws/frame_codec.hpp"

#include <catch2/catch.hpp>

#include "net/wire/ws/utf8.hpp"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

using namespace herald::net::ws;
using result = frame_parser::result;

namespace {

constexpr std::uint8_t key[4] = {0x37, 0xfa, 0x21, 0x3d};

/// Length forms a client may use: minimal, or forced 16/64-bit (non-minimal).
enum class len_form { minimal, ext16, ext64 };

/// A client frame: first byte `b0` as given (FIN, RSV, opcode), masked with
/// `key` unless `masked` is false (RFC 6455 section 5.3).
std::string raw_frame(std::uint8_t b0, std::string_view payload, len_form form = len_form::minimal,
                      bool masked = true) {
  std::string out(1, static_cast<char>(b0));
  const std::uint8_t m = masked ? 0x80 : 0;
  const std::uint64_t n = payload.size();
  if (form == len_form::minimal && n <= 125) {
    out += static_cast<char>(m | n);
  } else if (form != len_form::ext64 && n <= 0xFFFF) {
    out += static_cast<char>(m | 126);
    out += static_cast<char>(n >> 8);
    out += static_cast<char>(n);
  } else {
    out += static_cast<char>(m | 127);
    for (int i = 7; i >= 0; --i)
      out += static_cast<char>(n >> (8 * i));
  }
  if (masked)
    out.append(reinterpret_cast<const char*>(key), 4);
  for (std::size_t i = 0; i < payload.size(); ++i)
    out += static_cast<char>(payload[i] ^ (masked ? key[i % 4] : 0));
  return out;
}

std::string client_frame(opcode op, std::string_view payload, bool fin = true) {
  return raw_frame(static_cast<std::uint8_t>((fin ? 0x80 : 0) | static_cast<std::uint8_t>(op)),
                   payload);
}

/// Turns a server frame (encode_frame) into the same frame as a client sends it.
std::string mask_server_frame(std::string_view frame) {
  std::size_t len7 = static_cast<std::uint8_t>(frame[1]) & 0x7F;
  std::size_t header = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0);
  std::string out(frame.substr(0, header));
  out[1] = static_cast<char>(out[1] | 0x80);
  out.append(reinterpret_cast<const char*>(key), 4);
  for (std::size_t i = header; i < frame.size(); ++i)
    out += static_cast<char>(frame[i] ^ key[(i - header) % 4]);
  return out;
}

/// One parser event, with what the parser exposes for it.
struct event {
  result kind;
  std::string data; // message, control payload, close reason or error text
  std::uint16_t code = 0;
  bool operator==(const event& o) const {
    return kind == o.kind && data == o.data && code == o.code;
  }
};

std::ostream& operator<<(std::ostream& os, const event& e) {
  return os << "{" << static_cast<int>(e.kind) << ", " << e.data.size() << " bytes, " << e.code
            << "}";
}

/// Feeds `chunks` one after the other, as reads from a socket, and records
/// every event. Checks the consumed contract on each call.
std::vector<event> run(frame_parser& p, const std::vector<std::string_view>& chunks) {
  std::vector<event> out;
  for (std::string_view in : chunks) {
    for (;;) {
      std::size_t used = 0;
      result r = p.parse(in, used);
      REQUIRE(used <= in.size());
      in.remove_prefix(used);
      if (r == result::need_more) {
        REQUIRE(in.empty());
        break;
      }
      event e{r, {}, 0};
      if (r == result::text || r == result::binary)
        e.data = std::string(p.message());
      else if (r == result::ping || r == result::pong)
        e.data = std::string(p.control_payload());
      else if (r == result::close)
        e.data = std::string(p.close_reason()), e.code = p.close_code();
      else
        e.data = std::string(p.error_text()), e.code = p.error_code();
      out.push_back(e);
      if (p.finished())
        return out;
    }
  }
  return out;
}

std::vector<event> run(std::string_view in, std::size_t max_message_bytes = 1 << 20) {
  frame_parser p{max_message_bytes};
  return run(p, {in});
}

/// The single error a stream produces (after any events before it).
std::uint16_t error_of(std::string_view in, std::size_t max_message_bytes = 1 << 20) {
  auto ev = run(in, max_message_bytes);
  REQUIRE(!ev.empty());
  INFO("error text: " << ev.back().data);
  REQUIRE(ev.back().kind == result::error);
  CHECK(ev.back().data.size() <= max_close_reason_bytes);
  return ev.back().code;
}

std::string big(std::size_t n) {
  std::string s(n, 'a');
  for (std::size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>('a' + i % 26);
  return s;
}

} // namespace

// -- utf8 ----------------------------------------------------------------------

TEST_CASE("utf8: accepts every boundary code point, fed whole or byte by byte", "[ws][utf8]") {
  const std::string text = "a\x7f"
                           "\xc2\x80"
                           "\xdf\xbf"
                           "\xe0\xa0\x80"
                           "\xed\x9f\xbf"
                           "\xee\x80\x80"
                           "\xef\xbf\xbf"
                           "\xf0\x90\x80\x80"
                           "\xf4\x8f\xbf\xbf"
                           "plain ascii run of more than eight bytes";
  CHECK(is_valid_utf8(text));
  utf8_validator v;
  for (char c : text) {
    CHECK(v.feed(std::string_view(&c, 1)));
  }
  CHECK(v.complete());
}

TEST_CASE("utf8: rejects overlongs, surrogates, > U+10FFFF, stray and truncated bytes",
          "[ws][utf8][bad-input]") {
  for (std::string_view bad :
       {"\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xe0\x9f\xbf", "\xf0\x80\x80\xaf",
        "\xf0\x8f\xbf\xbf", "\xed\xa0\x80", "\xed\xbf\xbf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80",
        "\xff", "\x80", "abcdefgh\xbf", "\xc2\x41", "\xe2\x82", "\xf0\x9f\x98"}) {
    INFO("input size " << bad.size());
    CHECK_FALSE(is_valid_utf8(bad));
  }
  utf8_validator v;
  CHECK(v.feed("\xe2\x82"));
  CHECK_FALSE(v.complete()); // truncated: fine mid-message, invalid at its end
  CHECK(v.feed("\xac"));
  CHECK(v.complete());
  CHECK_FALSE(v.feed("\xed\xa0")); // fails at the first bad byte, and stays failed
  CHECK_FALSE(v.feed("a"));
  CHECK_FALSE(v.ok());
  v.reset();
  CHECK(v.feed("a"));
}

TEST_CASE("utf8: valid_utf8_prefix stops at a character boundary", "[ws][utf8]") {
  CHECK(valid_utf8_prefix("abc", 10) == 3);
  CHECK(valid_utf8_prefix("ab\xe2\x82\xac", 4) == 2);
  CHECK(valid_utf8_prefix("ab\xe2\x82\xac", 5) == 5);
  CHECK(valid_utf8_prefix("ab\xff"
                          "cd",
                          5) == 2);
}

// -- encoding ------------------------------------------------------------------

TEST_CASE("encode_header: FIN, unmasked, minimal 7/16/64-bit lengths", "[ws][frame]") {
  char h[max_server_header_bytes];
  CHECK(encode_header(opcode::text, 0, h) == 2);
  CHECK(std::string_view(h, 2) == std::string_view("\x81\x00", 2));
  CHECK(encode_header(opcode::binary, 125, h) == 2);
  CHECK(std::string_view(h, 2) == "\x82\x7d");
  CHECK(encode_header(opcode::text, 126, h) == 4);
  CHECK(std::string_view(h, 4) == std::string_view("\x81\x7e\x00\x7e", 4));
  CHECK(encode_header(opcode::text, 65535, h) == 4);
  CHECK(std::string_view(h, 4) == "\x81\x7e\xff\xff");
  CHECK(encode_header(opcode::ping, 65536, h) == 10);
  CHECK(std::string_view(h, 10) == std::string_view("\x89\x7f\0\0\0\0\0\x01\0\0", 10));
  CHECK(encode_header(opcode::close, 0x0123456789abcdefULL, h) == 10);
  CHECK(std::string_view(h, 10) == "\x88\x7f\x01\x23\x45\x67\x89\xab\xcd\xef");
}

TEST_CASE("encode then parse: 7-bit, 16-bit and 64-bit lengths", "[ws][frame]") {
  for (std::size_t n : {0, 1, 7, 8, 125, 126, 127, 65535, 65536, 70001}) {
    INFO("payload bytes " << n);
    const std::string payload = big(n);
    const std::string server = encode_frame(opcode::binary, payload);
    CHECK(server.size() == n + (n <= 125 ? 2 : n <= 65535 ? 4 : 10));
    CHECK(server.substr(server.size() - n) == payload);
    auto ev = run(mask_server_frame(server));
    REQUIRE(ev.size() == 1);
    CHECK(ev[0] == event{result::binary, payload, 0});
  }
}

TEST_CASE("non-minimal length encodings are accepted", "[ws][frame]") {
  for (auto form : {len_form::ext16, len_form::ext64}) {
    auto ev = run(raw_frame(0x81, "hello", form));
    REQUIRE(ev.size() == 1);
    CHECK(ev[0] == event{result::text, "hello", 0});
  }
}

TEST_CASE("encode_close_payload: code in network order, reason cut at a UTF-8 boundary",
          "[ws][frame]") {
  CHECK(encode_close_payload(1000, "") == std::string("\x03\xe8", 2));
  CHECK(encode_close_payload(4001, "bye") == "\x0f\xa1"
                                             "bye");
  CHECK(encode_close_payload(1009, big(200)).size() == 2 + 123);
  // A 2-, 3- and 4-byte character that would straddle byte 123 is left out whole.
  for (std::string_view c : {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"}) {
    std::string reason = big(122) + std::string(c);
    std::string out = encode_close_payload(1008, reason);
    CHECK(out.size() == 2 + 122);
    CHECK(is_valid_utf8(std::string_view(out).substr(2)));
  }
  CHECK(encode_close_payload(1008, big(121) + "\xc3\xa9").size() == 2 + 123); // fits exactly
  CHECK(encode_close_payload(1011, "ok\xff"
                                   "no") == "\x03\xf3"
                                            "ok");
  // The result parses back as the client would see it.
  frame_parser p{1024};
  auto ev = run(p, {mask_server_frame(encode_frame(
                     opcode::close, encode_close_payload(1001, "going \xe2\x82\xac away")))});
  REQUIRE(ev.size() == 1);
  CHECK(ev[0] == event{result::close, "going \xe2\x82\xac away", 1001});
}

// -- parsing: events -----------------------------------------------------------

TEST_CASE("parse: masked text, binary, ping, pong and empty frames", "[ws][frame]") {
  std::string in = client_frame(opcode::text, "{\"op\":\"ping\"}") +
                   client_frame(opcode::binary, std::string("\0\x01\xff", 3)) +
                   client_frame(opcode::ping, "p") + client_frame(opcode::pong, "") +
                   client_frame(opcode::text, "");
  auto ev = run(in);
  REQUIRE(ev.size() == 5);
  CHECK(ev[0] == event{result::text, "{\"op\":\"ping\"}", 0});
  CHECK(ev[1] == event{result::binary, std::string("\0\x01\xff", 3), 0});
  CHECK(ev[2] == event{result::ping, "p", 0});
  CHECK(ev[3] == event{result::pong, "", 0});
  CHECK(ev[4] == event{result::text, "", 0});
}

TEST_CASE("parse: consumed stops at the end of each event", "[ws][frame]") {
  std::string a = client_frame(opcode::text, "one");
  std::string in = a + client_frame(opcode::text, "two");
  frame_parser p{100};
  std::size_t used = 0;
  CHECK(p.parse(in, used) == result::text);
  CHECK(used == a.size());
  CHECK(p.message() == "one");
  CHECK(p.parse(std::string_view(in).substr(used), used) == result::text);
  CHECK(p.message() == "two");
  CHECK(p.parse("", used) == result::need_more);
  CHECK(used == 0);
  CHECK(p.message().empty()); // the delivered message is released on the next call
}

TEST_CASE("parse: take_message moves the message out and leaves no buffer", "[ws][frame]") {
  const std::string text = big(5000);
  std::string in = client_frame(opcode::text, text) + client_frame(opcode::text, "next");
  frame_parser p{10000};
  std::size_t used = 0;
  REQUIRE(p.parse(in, used) == result::text);
  CHECK(p.take_message() == text);
  CHECK(p.message().empty());
  REQUIRE(p.parse(std::string_view(in).substr(used), used) == result::text);
  CHECK(p.message() == "next");
}

TEST_CASE("parse: a fragmented message with control frames between fragments", "[ws][frame]") {
  std::string in =
    client_frame(opcode::text, "Hel", false) + client_frame(opcode::ping, "p1") +
    client_frame(opcode::continuation, "lo \xe2\x82", false) + client_frame(opcode::pong, "p2") +
    client_frame(opcode::continuation, "\xac!", true) + client_frame(opcode::binary, "b", false) +
    client_frame(opcode::continuation, "", true);
  auto ev = run(in);
  REQUIRE(ev.size() == 4);
  CHECK(ev[0] == event{result::ping, "p1", 0});
  CHECK(ev[1] == event{result::pong, "p2", 0});
  CHECK(ev[2] == event{result::text, "Hello \xe2\x82\xac!", 0}); // euro sign split across fragments
  CHECK(ev[3] == event{result::binary, "b", 0});
}

TEST_CASE("parse: a close frame between fragments ends the connection", "[ws][frame]") {
  auto ev = run(client_frame(opcode::text, "Hel", false) +
                client_frame(opcode::close, encode_close_payload(1000, "")));
  REQUIRE(ev.size() == 1);
  CHECK(ev[0] == event{result::close, "", 1000});
}

TEST_CASE("parse: split at every byte boundary gives the same events", "[ws][frame]") {
  std::string in = client_frame(opcode::text, "ab", false) + client_frame(opcode::ping, "xyz") +
                   client_frame(opcode::continuation, "c\xc3\xa9" + big(20), true) +
                   raw_frame(0x82, big(300)) + raw_frame(0x81, "n", len_form::ext64) +
                   client_frame(opcode::pong, big(125)) +
                   client_frame(opcode::close, encode_close_payload(4000, "done"));
  const auto whole = run(in);
  REQUIRE(whole.size() == 6);
  CHECK(whole.back() == event{result::close, "done", 4000});
  for (std::size_t k = 0; k <= in.size(); ++k) {
    frame_parser p{1 << 20};
    std::string_view s = in;
    CHECK(run(p, {s.substr(0, k), s.substr(k)}) == whole);
  }
  std::vector<std::string_view> bytes;
  for (std::size_t i = 0; i < in.size(); ++i)
    bytes.push_back(std::string_view(in).substr(i, 1));
  frame_parser p{1 << 20};
  CHECK(run(p, bytes) == whole);
}

TEST_CASE("parse: every masking phase unmasks correctly", "[ws][frame]") {
  std::string payload;
  for (int i = 0; i < 256; ++i)
    payload += static_cast<char>(i);
  for (std::size_t n = 0; n <= 40; ++n) {
    std::string in = raw_frame(0x82, payload.substr(0, n));
    for (std::size_t k = 0; k <= in.size(); k += 3) {
      frame_parser p{1024};
      auto ev = run(p, {std::string_view(in).substr(0, k), std::string_view(in).substr(k)});
      REQUIRE(ev.size() == 1);
      CHECK(ev[0].data == payload.substr(0, n));
    }
  }
}

TEST_CASE("parse: close codes and reasons (RFC 6455 section 5.5.1, 7.4)", "[ws][frame]") {
  auto ev = run(client_frame(opcode::close, ""));
  REQUIRE(ev.size() == 1);
  CHECK(ev[0] == event{result::close, "", close_no_status});
  for (std::uint16_t code :
       {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 4999}) {
    INFO("code " << code);
    ev = run(client_frame(opcode::close, encode_close_payload(code, "why")));
    REQUIRE(ev.size() == 1);
    CHECK(ev[0] == event{result::close, "why", code});
  }
}

TEST_CASE("parse: after close or error the parser stays there", "[ws][frame]") {
  for (std::string first : {client_frame(opcode::close, ""), raw_frame(0x83, "")}) {
    frame_parser p{100};
    std::string in = first + client_frame(opcode::text, "late");
    std::size_t used = 0;
    const result r = p.parse(in, used);
    CHECK((r == result::close || r == result::error));
    CHECK(used <= first.size());
    CHECK(p.finished());
    const auto code = r == result::close ? p.close_code() : p.error_code();
    CHECK(p.parse(std::string_view(in).substr(used), used) == r);
    CHECK(used == 0);
    CHECK((r == result::close ? p.close_code() : p.error_code()) == code);
  }
}

// -- parsing: protocol errors --------------------------------------------------

TEST_CASE("bad frame: client frames must be masked (1002)", "[ws][frame][bad-input]") {
  CHECK(error_of(raw_frame(0x81, "hi", len_form::minimal, false)) == close_protocol_error);
}

TEST_CASE("bad frame: RSV1-3 must be 0 (1002)", "[ws][frame][bad-input]") {
  for (std::uint8_t rsv : {0x40, 0x20, 0x10})
    CHECK(error_of(raw_frame(0x81 | rsv, "hi")) == close_protocol_error);
}

TEST_CASE("permessage-deflate: RSV1 marks a compressed message's first frame, nowhere else",
          "[ws][frame][deflate]") {
  // Not negotiated: RSV1 is 1002 (the case above). Negotiated:
  frame_parser p{100};
  p.allow_compression();
  std::size_t used = 0;
  const std::string not_utf8 = "\xff\xfe compressed bytes";
  REQUIRE(p.parse(raw_frame(0xC1, not_utf8), used) == result::text); // FIN + RSV1 + text
  CHECK(p.compressed());
  CHECK(p.message() == not_utf8); // handed on as is, not checked as UTF-8
  // A fragmented compressed message: RSV1 on the first frame only.
  frame_parser q{100};
  q.allow_compression();
  const auto two = raw_frame(0x42, "ab") + raw_frame(0x80, "cd");
  REQUIRE(q.parse(two, used) == result::binary);
  CHECK(q.compressed());
  CHECK(q.message() == "abcd");
  // Uncompressed messages still are checked.
  frame_parser u{100};
  u.allow_compression();
  REQUIRE(u.parse(client_frame(opcode::text, "plain"), used) == result::text);
  CHECK_FALSE(u.compressed());
  CHECK(error_of(raw_frame(0x81, "\xff")) == close_invalid_payload);
  // RSV1 on a continuation or a control frame, RSV2/RSV3: 1002.
  for (auto bad : {raw_frame(0x01, "a") + raw_frame(0xC0, "b"), raw_frame(0xC9, ""),
                   raw_frame(0xA1, "x"), raw_frame(0x91, "x")}) {
    frame_parser r{100};
    r.allow_compression();
    std::size_t n = 0;
    auto res = r.parse(bad, n);
    if (res == result::need_more)
      res = r.parse(std::string_view(bad).substr(n), n);
    CHECK(res == result::error);
    CHECK(r.error_code() == close_protocol_error);
  }
}

TEST_CASE("bad frame: reserved opcodes 3-7 and 11-15 (1002)", "[ws][frame][bad-input]") {
  for (std::uint8_t op : {3, 4, 5, 6, 7, 11, 12, 13, 14, 15}) {
    INFO("opcode " << int(op));
    CHECK(error_of(raw_frame(0x80 | op, "")) == close_protocol_error);
  }
}

TEST_CASE("bad frame: control frames need FIN and <= 125 bytes (1002)", "[ws][frame][bad-input]") {
  for (opcode op : {opcode::ping, opcode::pong, opcode::close}) {
    CHECK(error_of(client_frame(op, "", false)) == close_protocol_error);
    CHECK(error_of(client_frame(op, big(126))) == close_protocol_error);
    CHECK(error_of(raw_frame(0x80 | static_cast<std::uint8_t>(op), "x", len_form::ext16)) ==
          close_protocol_error);
  }
  auto ev = run(client_frame(opcode::ping, big(125)));
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].kind == result::ping);
}

TEST_CASE("bad frame: continuation without a message, or a new message inside one (1002)",
          "[ws][frame][bad-input]") {
  CHECK(error_of(client_frame(opcode::continuation, "x")) == close_protocol_error);
  CHECK(error_of(client_frame(opcode::text, "a") + client_frame(opcode::continuation, "b")) ==
        close_protocol_error);
  for (opcode op : {opcode::text, opcode::binary})
    CHECK(error_of(client_frame(opcode::text, "a", false) + client_frame(op, "b")) ==
          close_protocol_error);
}

TEST_CASE("bad frame: a 64-bit length with the top bit set (1002)", "[ws][frame][bad-input]") {
  const std::string in("\x82\xff\x80\0\0\0\0\0\0\x01", 10);
  CHECK(error_of(in) == close_protocol_error); // no mask key nor payload needed to decide
}

TEST_CASE("bad frame: a message over max_message_bytes fails from its header (1009)",
          "[ws][frame][bad-input]") {
  const std::size_t limit = 1000;
  auto ok = run(client_frame(opcode::text, big(limit)), limit);
  REQUIRE(ok.size() == 1);
  CHECK(ok[0].data.size() == limit);
  CHECK(error_of(client_frame(opcode::text, big(limit + 1)), limit) == close_too_big);
  // Across fragments: at the limit passes, one byte more fails.
  ok = run(client_frame(opcode::binary, big(600), false) +
             client_frame(opcode::continuation, big(400)),
           limit);
  REQUIRE(ok.size() == 1);
  CHECK(ok[0].data.size() == limit);
  CHECK(error_of(client_frame(opcode::binary, big(600), false) +
                   client_frame(opcode::continuation, big(401)),
                 limit) == close_too_big);
  // Decided from the 2-, 4- or 10-byte length, before the mask key or payload.
  for (std::size_t n : {std::size_t{100}, std::size_t{70000}}) {
    frame_parser p{n - 1};
    std::string in = client_frame(opcode::text, big(n));
    const std::size_t header = 2 + (n <= 125 ? 0 : n <= 65535 ? 2 : 8);
    std::size_t used = 0;
    CHECK(p.parse(std::string_view(in).substr(0, header), used) == result::error);
    CHECK(used == header);
    CHECK(p.error_code() == close_too_big);
  }
  // A huge announced length allocates nothing.
  frame_parser p{65536};
  std::size_t used = 0;
  CHECK(p.parse(std::string_view("\x82\xff\x7f\xff\xff\xff\xff\xff\xff\xff", 10), used) ==
        result::error);
  CHECK(p.error_code() == close_too_big);
}

TEST_CASE("bad frame: text must be valid UTF-8 (1007), checked as bytes arrive",
          "[ws][frame][bad-input]") {
  CHECK(error_of(client_frame(opcode::text, "ok\xff")) == close_invalid_payload);
  CHECK(error_of(client_frame(opcode::text, "\xed\xa0\x80")) == close_invalid_payload);
  CHECK(error_of(client_frame(opcode::text, "\xc0\xaf")) == close_invalid_payload);
  CHECK(error_of(client_frame(opcode::text, "\xf4\x90\x80\x80")) == close_invalid_payload);
  // A sequence cut by the end of the message.
  CHECK(error_of(client_frame(opcode::text, "euro \xe2\x82")) == close_invalid_payload);
  CHECK(error_of(client_frame(opcode::text, "\xe2", false) +
                 client_frame(opcode::continuation, "\x82")) == close_invalid_payload);
  // A bad byte in the first fragment fails before the rest of the frame arrives.
  std::string in = client_frame(opcode::text, "ab\xff" + big(100), false);
  frame_parser p{1000};
  std::size_t used = 0;
  CHECK(p.parse(std::string_view(in).substr(0, 6 + 3), used) == result::error);
  CHECK(p.error_code() == close_invalid_payload);
  // Binary messages are not checked.
  auto ev = run(client_frame(opcode::binary, "\xff\xfe"));
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].kind == result::binary);
}

TEST_CASE("bad frame: close payload of 1 byte, invalid codes (1002), bad reason (1007)",
          "[ws][frame][bad-input]") {
  CHECK(error_of(client_frame(opcode::close, "\x03")) == close_protocol_error);
  for (std::uint16_t code : {0, 999, 1004, 1005, 1006, 1015, 1016, 2000, 2999, 5000, 65535}) {
    INFO("code " << code);
    std::string payload{static_cast<char>(code >> 8), static_cast<char>(code & 0xff)};
    CHECK(error_of(client_frame(opcode::close, payload)) == close_protocol_error);
  }
  CHECK(error_of(client_frame(opcode::close, "\x03\xe8"
                                             "bad \xff")) == close_invalid_payload);
  CHECK(error_of(client_frame(opcode::close, "\x03\xe8"
                                             "cut \xe2\x82")) == close_invalid_payload);
}

TEST_CASE("is_valid_close_code follows RFC 6455 section 7.4", "[ws][frame]") {
  CHECK(is_valid_close_code(1000));
  CHECK(is_valid_close_code(1014));
  CHECK(is_valid_close_code(3000));
  CHECK(is_valid_close_code(4999));
  for (std::uint16_t c : {999, 1004, 1005, 1006, 1015, 1016, 2999, 5000})
    CHECK_FALSE(is_valid_close_code(c));
}
