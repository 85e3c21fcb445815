// A WebSocket session on a real loopback socket pair, driven through its
// shard the way channels drive it: a recovery whose replay crosses the
// high-water mark closes the client with 1013 in the middle of the replay,
// and the Close frame is the last thing on the wire (RFC 6455 section
// 5.5.1). The failing case: the subscription table went on writing the rest
// of the replay behind the Close frame. End to end (real process, slow
// readers): e2e.slow.
#include "net/core/io_shard.hpp"
#include "net/session_events.hpp"
#include "net/wire/ws/frame_codec.hpp"
#include "net/wire/ws/protocol.hpp"
#include "net/ws/ws_session.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <vector>

using namespace herald::net;

namespace {

struct recording_events : session_events {
  void on_text(std::string) override {}
  void on_subscribe_timeout(std::string, std::uint64_t) override {}
  void on_closed(close_reason r) override { closed = r; }
  std::optional<close_reason> closed;
};

publication_ptr pub(std::uint64_t offset, std::size_t bytes) {
  auto p = std::make_shared<publication>();
  p->channel = "stream:1";
  p->epoch = "e";
  p->offset = offset;
  p->event = "big";
  p->data = "\"" + std::string(bytes, 'x') + "\"";
  auto text = ws::encode_publication(p->channel, p->offset, p->event, p->data);
  char header[ws::max_server_header_bytes];
  p->ws_header.assign(header, ws::encode_header(ws::opcode::text, text.size(), header));
  p->ws = make_frame(std::move(text));
  return p;
}

struct server_frame {
  unsigned opcode;
  std::string payload;
};

// Splits what the server wrote (unmasked frames, RFC 6455 section 5.2).
std::vector<server_frame> frames_of(const std::string& bytes) {
  std::vector<server_frame> out;
  std::size_t at = 0;
  while (at + 2 <= bytes.size()) {
    const auto b0 = static_cast<unsigned char>(bytes[at]);
    std::uint64_t len = static_cast<unsigned char>(bytes[at + 1]) & 0x7f;
    std::size_t head = 2;
    if (len == 126 || len == 127) {
      const std::size_t n = len == 126 ? 2 : 8;
      REQUIRE(at + 2 + n <= bytes.size());
      len = 0;
      for (std::size_t i = 0; i < n; ++i)
        len = (len << 8) | static_cast<unsigned char>(bytes[at + 2 + i]);
      head += n;
    }
    REQUIRE(at + head + len <= bytes.size());
    out.push_back({b0 & 0x0fu, bytes.substr(at + head, len)});
    at += head + len;
  }
  CHECK(at == bytes.size()); // no partial frame at the end
  return out;
}

} // namespace

TEST_CASE("ws session: a replay that crosses the high-water mark ends with the Close frame",
          "[ws][session][slow]") {
  asio::io_context ioc{1};
  tcp::acceptor acceptor{ioc, {asio::ip::make_address("127.0.0.1"), 0}};
  tcp::socket client{ioc};
  client.connect(acceptor.local_endpoint());
  tcp::socket server = acceptor.accept();
  // Small kernel buffers, so the session's own queue holds the replay.
  client.set_option(asio::socket_base::receive_buffer_size(4096));
  server.set_option(asio::socket_base::send_buffer_size(4096));

  session_options opts;
  opts.client_max_buffer_bytes = 32 * 1024;
  auto session = std::make_shared<ws::ws_session>(std::move(server),
                                                  std::make_shared<const session_options>(opts));
  auto events = std::make_shared<recording_events>();
  session->start(events);

  // A recovery: 60 publications of ~2 KB missed, 120 KB against a 32 KB mark.
  std::vector<publication_ptr> replay;
  for (std::uint64_t i = 1; i <= 60; ++i)
    replay.push_back(pub(i, 2000));
  session->expect("stream:1", 1, 7, stream_position{"e", 0}, false);
  io_shard::of(ioc).answer(session, subscription_answer{"stream:1", 1, {"e", 60}, true, {}, replay});

  // Read everything the server writes until it closes the connection.
  std::string got;
  client.non_blocking(true);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool eof = false;
  while (!eof && std::chrono::steady_clock::now() < until) {
    ioc.run_for(std::chrono::milliseconds(10));
    char buf[65536];
    for (;;) {
      beast::error_code ec;
      auto n = client.read_some(asio::buffer(buf), ec);
      if (ec == asio::error::would_block)
        break;
      if (ec) {
        eof = true;
        break;
      }
      got.append(buf, n);
    }
  }
  REQUIRE(eof);
  REQUIRE(events->closed == close_reason::slow_client);
  auto frames = frames_of(got);
  REQUIRE(frames.size() >= 2u);
  CHECK(frames.front().opcode == 0x1); // the subscribed reply
  std::size_t closes = 0;
  for (const auto& f : frames)
    closes += f.opcode == 0x8 ? 1 : 0;
  CHECK(closes == 1u);
  CHECK(frames.back().opcode == 0x8); // nothing after the Close frame
  REQUIRE(frames.back().payload.size() >= 2u);
  CHECK(((static_cast<unsigned char>(frames.back().payload[0]) << 8) |
         static_cast<unsigned char>(frames.back().payload[1])) == 1013);
  CHECK(frames.size() < 62u); // the replay was cut: the client recovers the rest later
}
