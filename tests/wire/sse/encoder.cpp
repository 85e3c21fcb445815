#include "net/wire/sse/encoder.hpp"

#include <catch2/catch.hpp>

#include "net/wire/json_input.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <string_view>

using namespace herald::net;
using namespace herald::net::sse;

namespace {

std::size_t count(std::string_view s, char c) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), c));
}

} // namespace

TEST_CASE("encode_event writes event and data lines and a blank line", "[sse][encoder]") {
  CHECK(encode_event("withdrawn", R"({"amount":"12.5000000"})") ==
        "event: withdrawn\ndata: {\"amount\":\"12.5000000\"}\n\n");
  CHECK(encode_event("a", "null") == "event: a\ndata: null\n\n");
  CHECK(encode_event("x:y.z-1_2", "[1,2]") == "event: x:y.z-1_2\ndata: [1,2]\n\n");
  CHECK(encode_event("e", "\"\"") == "event: e\ndata: \"\"\n\n");
}

TEST_CASE("encode_id_line", "[sse][encoder]") {
  CHECK(encode_id_line("7ae5332b-u81bgp9q1gin-4_a11b35e1-jymkve2ow1t7-3") ==
        "id: 7ae5332b-u81bgp9q1gin-4_a11b35e1-jymkve2ow1t7-3\n");
  CHECK(encode_id_line("00000001-e-0") == "id: 00000001-e-0\n");
  // An id line followed by an event block is one SSE event.
  CHECK(encode_id_line("00000001-e-5") + encode_event("withdrawn", "{}") ==
        "id: 00000001-e-5\nevent: withdrawn\ndata: {}\n\n");
}

TEST_CASE("encode_gap", "[sse][encoder]") {
  SECTION("with a channel") {
    CHECK(
      encode_gap("stream:42", "history_expired") ==
      "event: herald.gap\ndata: {\"channel\":\"stream:42\",\"reason\":\"history_expired\"}\n\n");
    CHECK(encode_gap("stream:42", "epoch_changed") ==
          "event: herald.gap\ndata: {\"channel\":\"stream:42\",\"reason\":\"epoch_changed\"}\n\n");
    CHECK(
      encode_gap("stream:a.b", "offset_in_future") ==
      "event: herald.gap\ndata: {\"channel\":\"stream:a.b\",\"reason\":\"offset_in_future\"}\n\n");
  }
  SECTION("without a channel (slow client: the whole connection)") {
    CHECK(encode_gap("", "slow_client") ==
          "event: herald.gap\ndata: {\"reason\":\"slow_client\"}\n\n");
  }
  SECTION("data is one JSON object") {
    auto block =
      encode_gap("user:GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ", "epoch_changed");
    const std::string_view prefix = "event: herald.gap\ndata: ";
    REQUIRE(block.compare(0, prefix.size(), prefix) == 0);
    REQUIRE(block.size() > prefix.size() + 2);
    auto data = block.substr(prefix.size(), block.size() - prefix.size() - 2);
    auto j = nlohmann::json::parse(data);
    CHECK(j == nlohmann::json{
                 {"channel", "user:GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ"},
                 {"reason", "epoch_changed"}});
  }
}

TEST_CASE("encode_shutdown: retry hint, then herald.shutdown without an id", "[sse][encoder]") {
  CHECK(encode_shutdown(500) ==
        "retry: 500\nevent: herald.shutdown\ndata: {\"reason\":\"shutdown\",\"retry_ms\":500}\n\n");
  // No id line: the client's last event id (its cursor) must stay valid.
  CHECK(encode_shutdown(1).find("id:") == std::string::npos);
}

TEST_CASE("heartbeat is a comment line", "[sse][encoder]") {
  CHECK(heartbeat == ":\n\n");
  CHECK(heartbeat.size() == 3);
}

TEST_CASE("encode_response_head", "[sse][encoder]") {
  CHECK(encode_response_head(2000) == "HTTP/1.1 200 OK\r\n"
                                      "Content-Type: text/event-stream\r\n"
                                      "Cache-Control: no-cache\r\n"
                                      "X-Accel-Buffering: no\r\n"
                                      "\r\n"
                                      "retry: 2000\n\n");
  CHECK(encode_response_head(1000) == "HTTP/1.1 200 OK\r\n"
                                      "Content-Type: text/event-stream\r\n"
                                      "Cache-Control: no-cache\r\n"
                                      "X-Accel-Buffering: no\r\n"
                                      "\r\n"
                                      "retry: 1000\n\n");
  auto zero = encode_response_head(0);
  CHECK(zero.substr(zero.size() - 10) == "retry: 0\n\n");
  // The body is delimited by the close of the connection: no length, no chunking.
  auto head = encode_response_head(2000);
  CHECK(head.find("Content-Length") == std::string::npos);
  CHECK(head.find("Transfer-Encoding") == std::string::npos);
}

TEST_CASE("data from dump_compact never breaks an SSE event", "[sse][encoder][bad-input]") {
  using nlohmann::json;
  const std::string nasty[] = {
    "\n",
    "\r",
    "\r\n",
    "a\nb\rc\r\nd",
    "\n\ndata: injected\n\nevent: x\n",
    "\r\rid: 1\r",
    "\xe2\x80\xa8", // U+2028 LINE SEPARATOR
    "\xe2\x80\xa9", // U+2029 PARAGRAPH SEPARATOR
    "\xc2\x85",     // U+0085 NEXT LINE
    std::string("nul\0byte", 8),
    "\x0b\x0c\x1b\x7f",
    "\xff\xfe\n", // invalid UTF-8 next to a newline
  };
  json values = json::array();
  for (const auto& s : nasty) {
    values.push_back(s);
    values.push_back(json{{"k", s}, {s, 1}});
  }
  json all = json::array();
  for (const auto& s : nasty)
    all.push_back(s);
  values.push_back(json{{"all", all}});

  for (const auto& v : values) {
    auto data = dump_compact(v);
    auto block = encode_id_line("00000001-e-1") + encode_event("withdrawn", data);
    INFO("data: " << data);
    CHECK(count(data, '\n') == 0);
    CHECK(count(data, '\r') == 0);
    CHECK(count(data, '\0') == 0);
    // The only line feeds are the field terminators and the blank line.
    CHECK(count(block, '\n') == 4);
    CHECK(count(block, '\r') == 0);
    CHECK(block == "id: 00000001-e-1\nevent: withdrawn\ndata: " + data + "\n\n");
  }

  SECTION("newlines are escaped, not dropped") {
    CHECK(dump_compact(json("a\nb")) == R"("a\nb")");
    CHECK(dump_compact(json("\r\n")) == R"("\r\n")");
    CHECK(dump_compact(json(std::string("\0", 1))) == R"("\u0000")");
    // U+2028 is not an SSE line terminator; it stays as UTF-8.
    CHECK(dump_compact(json("\xe2\x80\xa8")) == "\"\xe2\x80\xa8\"");
  }
}

TEST_CASE("the token_expired block is a named event with a JSON reason", "[sse][encoder]") {
  CHECK(herald::net::sse::encode_token_expired() ==
        "event: herald.token_expired\ndata: {\"reason\":\"token_expired\"}\n\n");
}

TEST_CASE("encode_enveloped_event names the channel and nests the data as is", "[sse][encoder]") {
  CHECK(encode_enveloped_event("withdrawn", "stream:1001", R"({"amount":"12.5000000"})") ==
        "event: withdrawn\ndata: "
        "{\"channel\":\"stream:1001\",\"data\":{\"amount\":\"12.5000000\"}}\n\n");
  CHECK(encode_enveloped_event("a", "user:GA7Q", "null") ==
        "event: a\ndata: {\"channel\":\"user:GA7Q\",\"data\":null}\n\n");
  // What an EventSource client does with MessageEvent.data: parse it, read
  // .channel and .data.
  const auto block = encode_enveloped_event("e", "stream:x", R"([1,{"k":"v\n"}])");
  const auto line = block.substr(block.find("data: ") + 6);
  auto parsed = nlohmann::json::parse(line.substr(0, line.find('\n')));
  CHECK(parsed == nlohmann::json{{"channel", "stream:x"},
                                 {"data", nlohmann::json::array({1, {{"k", "v\n"}}})}});
}

TEST_CASE("encode_enveloped_event keeps any channel text on one line",
          "[sse][encoder][bad-input]") {
  // Channel names are validated before they reach the encoder; the encoder
  // stays safe on its own (an escaped string, never a second field or event).
  const std::string nasty[] = {"a\nb", "\r\n\ndata: x\n\n", "q\"uote\\", "\xff\xfe"};
  for (const auto& channel : nasty) {
    INFO("channel: " << channel);
    const auto block = encode_enveloped_event("e", channel, "{}");
    CHECK(count(block, '\n') == 3); // event line, data line, blank line
    CHECK(count(block, '\r') == 0);
    const auto line = block.substr(block.find("data: ") + 6);
    auto parsed = nlohmann::json::parse(line.substr(0, line.find('\n')), nullptr, false);
    REQUIRE_FALSE(parsed.is_discarded());
    CHECK(parsed["data"] == nlohmann::json::object());
  }
}
