// Pure codecs of the load generator: the incremental SSE parser, the
// WebSocket client codec, payload and cursor scanners, response heads and
// the channel plan (user channels must be valid Stellar accounts).
#include "loadtest/channel_plan.hpp"
#include "loadtest/http_head.hpp"
#include "loadtest/payload.hpp"
#include "loadtest/sse_parser.hpp"
#include "loadtest/svg_plot.hpp"
#include "loadtest/ws_client.hpp"
#include "net/wire/strkey.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace herald::loadtest;

namespace {
struct seen {
  std::string event, data, id;
};

std::vector<seen> parse_in_pieces(const std::string& stream, std::size_t piece) {
  sse_parser p;
  std::vector<seen> out;
  for (std::size_t i = 0; i < stream.size(); i += piece) {
    auto n = std::min(piece, stream.size() - i);
    p.feed(stream.data() + i, n, [&](const sse_event& e) {
      out.push_back({std::string{e.event}, std::string{e.data}, std::string{e.id}});
    });
  }
  return out;
}
} // namespace

TEST_CASE("SSE parser handles any split and every line ending") {
  const std::string stream = "retry: 2000\n\n"
                             ": heartbeat\n"
                             "id: a-1\nevent: loadtest\ndata: {\"seq\":1}\n\n"
                             "id: a-2\r\nevent: loadtest\r\ndata: x\r\ndata: y\r\n\r\n"
                             "data:no-space\r\r"
                             "event: ignored\n\n"
                             "data: last\n\n";
  for (std::size_t piece : {1u, 2u, 3u, 7u, 1000u}) {
    auto ev = parse_in_pieces(stream, piece);
    INFO("piece " << piece);
    REQUIRE(ev.size() == 4);
    REQUIRE(ev[0].event == "loadtest");
    REQUIRE(ev[0].data == "{\"seq\":1}");
    REQUIRE(ev[0].id == "a-1");
    REQUIRE(ev[1].data == "x\ny");
    REQUIRE(ev[1].id == "a-2");
    REQUIRE(ev[2].event == "message");
    REQUIRE(ev[2].data == "no-space");
    REQUIRE(ev[2].id == "a-2");        // the last event id persists
    REQUIRE(ev[3].event == "message"); // an undispatched event type does not leak
  }
}

TEST_CASE("WebSocket accept key matches RFC 6455's example") {
  REQUIRE(ws::accept_for_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  REQUIRE(ws::base64("ab", 2) == "YWI=");
  REQUIRE(ws::make_key(1, 2).size() == 24);
}

TEST_CASE("WebSocket client frames are masked and decodable") {
  std::string frame;
  ws::append_client_frame(frame, ws::opcode::text, "hello", 0x37fa213d);
  // RFC 6455 section 5.7: a masked "Hello"-style frame.
  REQUIRE(static_cast<unsigned char>(frame[0]) == 0x81);
  REQUIRE(static_cast<unsigned char>(frame[1]) == 0x85);
  REQUIRE(frame.size() == 2 + 4 + 5);
  std::string big(70000, 'z');
  std::string f2;
  ws::append_client_frame(f2, ws::opcode::text, big, 1);
  REQUIRE(static_cast<unsigned char>(f2[1]) == (0x80 | 127));
}

TEST_CASE("WebSocket decoder reassembles fragments across reads") {
  // Server frames: unmasked. "Hel" (text, not fin), ping "p", "lo" (cont, fin), 300-byte text.
  std::string s;
  s += "\x01\x03Hel";
  s += "\x89\x01p";
  s += "\x80\x02lo";
  std::string long_payload(300, 'a');
  s += "\x81\x7e";
  s += static_cast<char>(300 >> 8);
  s += static_cast<char>(300 & 0xff);
  s += long_payload;
  for (std::size_t piece : {1u, 5u, 1000u}) {
    ws::frame_decoder d;
    std::vector<std::pair<ws::opcode, std::string>> got;
    for (std::size_t i = 0; i < s.size(); i += piece)
      REQUIRE(
        d.feed(s.data() + i, std::min(piece, s.size() - i),
               [&](ws::opcode op, std::string_view m) { got.emplace_back(op, std::string{m}); }));
    REQUIRE(got.size() == 3);
    REQUIRE(got[0].first == ws::opcode::ping);
    REQUIRE(got[1] == std::make_pair(ws::opcode::text, std::string{"Hello"}));
    REQUIRE(got[2].second == long_payload);
  }
  ws::frame_decoder bad;
  std::string masked = "\x81\x81\x00\x00\x00\x00x";
  REQUIRE_FALSE(bad.feed(masked.data(), masked.size(), [](ws::opcode, std::string_view) {}));
}

TEST_CASE("WebSocket decoder inflates permessage-deflate messages once allowed") {
  // "abc" as raw DEFLATE, sync-flushed, tail removed (RFC 7692 section 7.2.1),
  // in a text frame with RSV1; then split over a continuation frame.
  const std::string abc{"\x4a\x4c\x4a\x06\x00", 5};
  std::string whole = "\xc1" + std::string(1, static_cast<char>(abc.size())) + abc;
  std::string split = "\x41\x02" + abc.substr(0, 2) + "\x80\x03" + abc.substr(2);
  ws::frame_decoder off;
  REQUIRE_FALSE(off.feed(whole.data(), whole.size(), [](ws::opcode, std::string_view) {}));
  for (const auto& s : {whole, split}) {
    ws::frame_decoder d;
    d.allow_deflate();
    std::vector<std::string> got;
    REQUIRE(d.feed(s.data(), s.size(), [&](ws::opcode, std::string_view m) { got.emplace_back(m); }));
    REQUIRE(got == std::vector<std::string>{"abc"});
  }
  CHECK(ws::make_upgrade_request("h:1", "/v1/ws", "k", true).find("permessage-deflate") !=
        std::string::npos);
  CHECK(ws::make_upgrade_request("h:1", "/v1/ws", "k").find("Extensions") == std::string::npos);
}

TEST_CASE("publication data round-trips through the scanners") {
  auto d = make_data(42, 123456789012345ull, {3, 17}, 200);
  REQUIRE(d.size() == 200);
  pub_fields f;
  REQUIRE(scan_pub_fields(d, f));
  REQUIRE(f.seq == 42);
  REQUIRE(f.t_ns == 123456789012345ull);
  REQUIRE(f.n_c == 2);
  REQUIRE(f.lists(17));
  REQUIRE_FALSE(f.lists(4));
  // Herald re-serialises data with sorted keys; the scanner does not care.
  std::string frame =
    R"({"op":"publication","channel":"stream:lt-3","offset":9,"event":"loadtest","data":{"c":[3],"pad":"xx","seq":7,"t":99}})";
  std::string_view ch;
  std::uint64_t off = 0;
  REQUIRE(scan_ws_publication(frame, ch, off));
  REQUIRE(ch == "stream:lt-3");
  REQUIRE(off == 9);
  REQUIRE(scan_pub_fields(frame, f));
  REQUIRE(f.seq == 7);
  REQUIRE(f.t_ns == 99);
  REQUIRE_FALSE(scan_ws_publication(R"({"op":"subscribed","channel":"x"})", ch, off));
  REQUIRE_FALSE(scan_pub_fields(R"({"hello":1})", f));
}

TEST_CASE("Centrifugo publication pushes give their channel and offset") {
  // The offset follows the data, which may itself hold an "offset" key.
  std::string push =
    R"({"push":{"channel":"stream:lt-3","pub":{"data":{"c":[3],"offset":1,"seq":7,"t":99},"offset":12,"tags":{"event":"loadtest"}}}})";
  std::string_view ch;
  std::uint64_t off = 0;
  REQUIRE(scan_centrifugo_publication(push, ch, off));
  CHECK(ch == "stream:lt-3");
  CHECK(off == 12);
  pub_fields f;
  REQUIRE(scan_pub_fields(push, f));
  CHECK(f.seq == 7);
  CHECK_FALSE(scan_centrifugo_publication(R"({"id":2,"subscribe":{"offset":3}})", ch, off));
  CHECK_FALSE(scan_centrifugo_publication(R"({"push":{"channel":"x","unsubscribe":{"code":2500}}})",
                                          ch, off));
  CHECK_FALSE(scan_centrifugo_publication("{}", ch, off));
}

TEST_CASE("SSE cursors parse into entries") {
  std::vector<cursor_entry> got;
  REQUIRE(for_each_cursor_entry("7ae5332b-u81bgp9q1gin-4_a11b35e1-jymkve2ow1t7-3",
                                [&](const cursor_entry& e) { got.push_back(e); }));
  REQUIRE(got.size() == 2);
  REQUIRE(got[0].hash == 0x7ae5332bu);
  REQUIRE(got[0].epoch == "u81bgp9q1gin");
  REQUIRE(got[0].offset == 4);
  REQUIRE(got[1].offset == 3);
  REQUIRE_FALSE(for_each_cursor_entry("nothex00-e-1", [](const cursor_entry&) {}));
  REQUIRE_FALSE(for_each_cursor_entry("", [](const cursor_entry&) {}));
}

TEST_CASE("response heads") {
  std::string head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: "
                     "websocket\r\nsec-websocket-accept:  abc \r\n\r\nrest";
  auto end = http::head_end(head);
  REQUIRE(end == head.size() - 4);
  REQUIRE(http::status_code(head) == 101);
  REQUIRE(http::header_value(head, "Sec-WebSocket-Accept") == "abc");
  REQUIRE(http::header_value(head, "Missing").empty());
  REQUIRE(http::head_end("HTTP/1.1 200 OK\r\n") == std::string_view::npos);
  REQUIRE(http::status_code("garbage") == 0);
}

TEST_CASE("channel plan: user channels are valid Stellar accounts, mapping is consistent") {
  channel_plan p;
  p.streams = 5;
  p.layout = channel_layout::streams_and_users;
  p.seed = 99;
  REQUIRE(p.total() == 10);
  REQUIRE(p.name(2) == "stream:lt-2");
  auto user = p.name(7);
  REQUIRE(user.rfind("user:G", 0) == 0);
  REQUIRE(herald::net::is_account_id(user.substr(5)));
  REQUIRE(p.name(7) == user); // deterministic
  REQUIRE(p.name(8) != user);
  REQUIRE(p.channels_of_connection(7) == std::vector<int>{2, 7});
  // Publication 3 goes to stream 2 and to user 3 (the neighbour's).
  REQUIRE(p.channels_of_publication(3) == std::vector<int>{2, 8});
  // A connection never hears one publication on both of its channels.
  for (std::uint64_t seq = 1; seq <= 10; ++seq)
    for (std::uint64_t k = 0; k < 10; ++k) {
      auto pub = p.channels_of_publication(seq);
      auto con = p.channels_of_connection(k);
      int both = 0;
      for (int c : con)
        both += (c == pub[0] || c == pub[1]);
      REQUIRE(both <= 1);
    }
}

TEST_CASE("percentile SVG renders") {
  herald::loadtest::histogram h;
  for (int i = 1; i <= 1000; ++i)
    h.record(static_cast<std::uint64_t>(i) * 1000);
  auto svg = render_percentile_svg("t <1>", {{"run", &h}});
  REQUIRE(svg.find("<svg") == 0);
  REQUIRE(svg.find("polyline") != std::string::npos);
  REQUIRE(svg.find("t &lt;1&gt;") != std::string::npos);
}

TEST_CASE("throughput SVG draws the rates between samples and the markers") {
  using herald::loadtest::timeline_sample;
  // 1,000 deliveries/s and 10 publications/s for 2 s, then nothing.
  std::vector<timeline_sample> s{
    {0.0, 0, 0, 100}, {1.0, 1000, 10, 100}, {2.0, 2000, 20, 100}, {3.0, 2000, 20, 50}};
  auto svg = render_timeline_svg("run <a>", s, {{"storm", 1.5}});
  REQUIRE(svg.find("<svg") == 0);
  REQUIRE(svg.find("run &lt;a&gt;") != std::string::npos);
  // Three curves (deliveries, publications, open connections).
  std::size_t lines = 0;
  for (auto p = svg.find("<polyline"); p != std::string::npos; p = svg.find("<polyline", p + 1))
    ++lines;
  REQUIRE(lines == 3);
  REQUIRE(svg.find(">storm</text>") != std::string::npos);
  // The rate axis tops out at the nice ceiling of 1,050/s: 2k.
  REQUIRE(svg.find(">2k</text>") != std::string::npos);
  // Publications/s drawn x100 (100 subscribers per publication here).
  REQUIRE(svg.find("publications/s (x100)") != std::string::npos);
  // Too few samples: axes only, no curve, no crash.
  auto empty = render_timeline_svg("none", {{0.0, 0, 0, 0}}, {});
  REQUIRE(empty.find("<polyline") == std::string::npos);
}
