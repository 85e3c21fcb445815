// The pure part of reading an HTTP request (net/http/request_check): head
// limits, ambiguous framing, routes, and the SSE request's channels and cursor.
#include "net/http/request_check.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

using namespace herald;
using namespace herald::net;
using namespace std::chrono_literals;

TEST_CASE("check_head counts header fields", "[limits][http]") {
  bhttp::fields f;
  for (int i = 0; i < 3; ++i)
    f.insert("X-Same", "v"); // repeats count once per line
  f.insert("Host", "x");
  std::string detail;
  CHECK(http::header_count(f) == 4);
  CHECK(http::check_head(f, 4, detail) == errc::none);
  CHECK(http::check_head(f, 3, detail) == errc::headers_too_large);
  CHECK(detail == "more than 3 header fields");
}

TEST_CASE("check_head refuses ambiguous framing (request smuggling)", "[limits][http]") {
  std::string detail;
  auto with_te = [](std::initializer_list<const char*> values, bool length) {
    bhttp::fields f;
    f.insert("Host", "x");
    for (auto v : values)
      f.insert(bhttp::field::transfer_encoding, v);
    if (length)
      f.insert(bhttp::field::content_length, "47");
    return f;
  };
  CHECK(http::check_head(with_te({"chunked"}, false), 100, detail) == errc::none);
  CHECK(http::check_head(with_te({" Chunked "}, false), 100, detail) == errc::none);
  for (auto bad : {"chunked, chunked", "xchunked", "identity", "gzip", "gzip, chunked", "",
                   "chunked;x=1", "chunked\t,"}) {
    INFO(bad);
    CHECK(http::check_head(with_te({bad}, false), 100, detail) == errc::invalid_request);
    CHECK(http::check_head(with_te({bad}, true), 100, detail) == errc::invalid_request);
  }
  CHECK(http::check_head(with_te({"chunked", "chunked"}, false), 100, detail) ==
        errc::invalid_request);
  CHECK(detail == "Transfer-Encoding must appear once");
  CHECK(http::check_head(with_te({"chunked"}, true), 100, detail) == errc::invalid_request);
  CHECK(detail == "Transfer-Encoding and Content-Length together");
  bhttp::fields plain;
  plain.insert(bhttp::field::content_length, "10");
  CHECK(http::check_head(plain, 100, detail) == errc::none);
}

TEST_CASE("is_api_target: /api and below, nothing that merely starts alike", "[http]") {
  CHECK(http::is_api_target("/api"));
  CHECK(http::is_api_target("/api/publish"));
  CHECK(http::is_api_target("/api/foo?x=1"));
  CHECK(http::is_api_target("/api?x"));
  CHECK_FALSE(http::is_api_target("/apix"));
  CHECK_FALSE(http::is_api_target("/v1/publish"));
  CHECK_FALSE(http::is_api_target("/ap"));
  CHECK_FALSE(http::is_api_target(""));
  CHECK_FALSE(http::is_api_target("http://h/api/publish"));
}

TEST_CASE("classify maps paths to routes", "[http]") {
  http::route r{};
  std::string detail;
  CHECK(http::classify("/v1/sse?channel=stream:1", r, detail) == errc::none);
  CHECK(r == http::route::sse);
  CHECK(http::classify("/v1/publish", r, detail) == errc::none);
  CHECK(r == http::route::publish);
  CHECK(http::classify("/", r, detail) == errc::none);
  CHECK(r == http::route::root);
  CHECK(http::classify("/v1/ssex", r, detail) == errc::none);
  CHECK(r == http::route::unknown);
  CHECK(http::classify("http://example.com/v1/sse", r, detail) == errc::invalid_request);
  CHECK(http::classify("", r, detail) == errc::invalid_request);
  CHECK(http::classify("/%zz", r, detail) == errc::invalid_request);
}

TEST_CASE("parse_sse_request: channels, limits and the cursor", "[http][sse]") {
  std::string detail;
  {
    sse_subscription sub;
    CHECK(http::parse_sse_request("/v1/sse?channel=stream:1&channel=stream:2&channel=stream:1",
                                  nullptr, 64, sub, detail) == errc::none);
    CHECK(sub.channels == std::vector<std::string>{"stream:1", "stream:2"});
    CHECK_FALSE(sub.has_cursor);
  }
  {
    sse_subscription sub;
    CHECK(http::parse_sse_request("/v1/sse", nullptr, 64, sub, detail) == errc::invalid_request);
  }
  {
    sse_subscription sub;
    CHECK(http::parse_sse_request("/v1/sse?channel=stream:", nullptr, 64, sub, detail) ==
          errc::invalid_channel);
    // issue 39: the detail names the channel and the rule (was: empty, so
    // the answer said only which shapes exist).
    CHECK(detail == R"(?channel=: invalid channel "stream:": the id after "stream:" must be )"
                    "1-128 characters");
  }
  {
    sse_subscription sub;
    CHECK(http::parse_sse_request("/v1/sse?channel=stream:1&channel=stream:2", nullptr, 1, sub,
                                  detail) == errc::too_many_channels);
  }
  {
    // The header wins over the query parameter.
    sse_subscription sub;
    std::string_view header = "7ae5332b-u81bgp9q1gin-4";
    CHECK(http::parse_sse_request("/v1/sse?channel=stream:1&last_event_id=bad", &header, 64, sub,
                                  detail) == errc::none);
    CHECK(sub.has_cursor);
    REQUIRE(sub.cursor.size() == 1);
    CHECK(sub.cursor[0].position.offset == 4);
  }
  {
    sse_subscription sub;
    std::string_view header = "";
    CHECK(http::parse_sse_request("/v1/sse?channel=stream:1", &header, 64, sub, detail) ==
          errc::invalid_cursor);
  }
}

TEST_CASE(
  "check_singular: a singular parameter given twice is refused, on every route that reads it",
  "[http][bad-input]") {
  using http::route;
  std::string detail;
  auto twice = [](const char* name) {
    bhttp::fields f;
    f.insert("Host", "x");
    f.insert(name, "A");
    f.insert(name, "B");
    return f;
  };
  bhttp::fields once;
  once.insert("Host", "x");
  once.insert("Authorization", "Bearer A");
  // Was: SSE used the last ?token=, publish the first Idempotency-Key.
  const std::pair<route, std::vector<const char*>> reads[] = {
    {route::sse, {"Authorization", "Last-Event-ID", "Origin"}},
    {route::ws, {"Authorization", "Origin", "Host", "Sec-WebSocket-Key", "Sec-WebSocket-Version"}},
    {route::centrifugo_ws,
     {"Authorization", "Origin", "Host", "Sec-WebSocket-Key", "Sec-WebSocket-Version"}},
    {route::publish, {"Authorization", "Idempotency-Key"}},
    {route::channel, {"Authorization"}},
    {route::api_publish, {"Authorization", "X-API-Key"}},
    {route::api_broadcast, {"Authorization", "X-API-Key"}},
    {route::api_history, {"Authorization", "X-API-Key"}},
    {route::api_info, {"Authorization", "X-API-Key"}},
  };
  for (const auto& [where, names] : reads) {
    CHECK(http::check_singular(once, "/x", where, detail) == errc::none);
    for (auto name : names) {
      INFO(name << " on route " << static_cast<int>(where));
      CHECK(http::check_singular(twice(name), "/x", where, detail) == errc::invalid_request);
      CHECK(detail == "the " + std::string{name} + " header is given more than once");
    }
  }
  // Header names are case-insensitive: two lines spelled differently are two.
  bhttp::fields mixed;
  mixed.insert("idempotency-key", "A");
  mixed.insert("IDEMPOTENCY-KEY", "B");
  CHECK(http::check_singular(mixed, "/v1/publish", route::publish, detail) ==
        errc::invalid_request);
  CHECK(detail == "the Idempotency-Key header is given more than once");
  // A route that does not read a header leaves it alone (Accept is a list).
  CHECK(http::check_singular(twice("Idempotency-Key"), "/v1/sse?channel=stream:1", route::sse,
                             detail) == errc::none);
  CHECK(http::check_singular(twice("Authorization"), "/healthz", route::healthz, detail) ==
        errc::none);
  CHECK(http::check_singular(twice("X-API-Key"), "/v1/publish", route::publish, detail) ==
        errc::none);
}

TEST_CASE("check_singular: ?token and ?last_event_id once on /v1/sse, channel repeats",
          "[http][sse][bad-input]") {
  using http::route;
  std::string detail;
  bhttp::fields f;
  f.insert("Host", "x");
  auto sse = [&](std::string_view target) {
    return http::check_singular(f, target, route::sse, detail);
  };
  CHECK(sse("/v1/sse?channel=stream:1&channel=stream:2&token=A&last_event_id=c") == errc::none);
  CHECK(sse("/v1/sse?channel=stream:1&token=A&token=B") == errc::invalid_request);
  CHECK(detail == "the token query parameter is given more than once");
  CHECK(sse("/v1/sse?token=A&channel=stream:1&token=A") == errc::invalid_request); // same value too
  CHECK(sse("/v1/sse?channel=stream:1&token=A&%74oken=B") == errc::invalid_request); // decoded
  CHECK(sse("/v1/sse?channel=stream:1&token&token=B") == errc::invalid_request);
  CHECK(sse("/v1/sse?channel=stream:1&last_event_id=a&last_event_id=b") == errc::invalid_request);
  CHECK(detail == "the last_event_id query parameter is given more than once");
  CHECK(sse("/v1/sse?channel=stream:1&envelope=1&envelope=0") == errc::invalid_request);
  CHECK(detail == "the envelope query parameter is given more than once");
  // Other routes read no query parameter.
  CHECK(http::check_singular(f, "/v1/ws?token=A&token=B", route::ws, detail) == errc::none);
}

TEST_CASE("parse_sse_request: event names are the connection's filter", "[http][sse][filter]") {
  std::string detail;
  {
    sse_subscription sub;
    CHECK(http::parse_sse_request(
            "/v1/sse?event=withdrawn&channel=stream:1&event=topped_up&event=withdrawn", nullptr, 64,
            sub, detail) == errc::none);
    CHECK(sub.events == std::vector<std::string>{"withdrawn", "topped_up"});
  }
  {
    sse_subscription sub;
    CHECK(http::parse_sse_request("/v1/sse?channel=stream:1", nullptr, 64, sub, detail) ==
          errc::none);
    CHECK(sub.events.empty());
  }
  for (const char* bad : {"event=", "event=herald.gap", "event=a%20b", "event=%C3%A9"}) {
    sse_subscription sub;
    detail.clear();
    CAPTURE(bad);
    CHECK(http::parse_sse_request(std::string{"/v1/sse?channel=stream:1&"} + bad, nullptr, 64, sub,
                                  detail) == errc::invalid_event);
    CHECK(detail.find("event name") != std::string::npos);
  }
  std::string many = "/v1/sse?channel=stream:1";
  for (std::size_t i = 0; i < max_sse_events; ++i)
    many += "&event=e" + std::to_string(i);
  {
    sse_subscription sub;
    CHECK(http::parse_sse_request(many, nullptr, 64, sub, detail) == errc::none);
    CHECK(sub.events.size() == max_sse_events);
  }
  {
    sse_subscription sub;
    CHECK(http::parse_sse_request(many + "&event=one_more", nullptr, 64, sub, detail) ==
          errc::invalid_request);
    CHECK(detail.find("at most 32") != std::string::npos);
  }
}

TEST_CASE("parse_sse_request: ?envelope= is 0 or 1", "[http][sse]") {
  std::string detail;
  SECTION("absent or 0: the data alone; 1: the channel envelope") {
    sse_subscription plain;
    CHECK(http::parse_sse_request("/v1/sse?channel=stream:1", nullptr, 64, plain, detail) ==
          errc::none);
    CHECK_FALSE(plain.envelope);
    sse_subscription zero;
    CHECK(http::parse_sse_request("/v1/sse?channel=stream:1&envelope=0", nullptr, 64, zero,
                                  detail) == errc::none);
    CHECK_FALSE(zero.envelope);
    sse_subscription one;
    CHECK(http::parse_sse_request("/v1/sse?envelope=1&channel=stream:1", nullptr, 64, one,
                                  detail) == errc::none);
    CHECK(one.envelope);
  }
  SECTION("any other value is refused, naming the parameter") {
    for (const char* bad : {"envelope=", "envelope", "envelope=true", "envelope=2", "envelope=01",
                            "envelope=%31%31"}) {
      INFO(bad);
      sse_subscription sub;
      detail.clear();
      CHECK(http::parse_sse_request(std::string{"/v1/sse?channel=stream:1&"} + bad, nullptr, 64,
                                    sub, detail) == errc::invalid_request);
      CHECK(detail.find("?envelope= must be 1") != std::string::npos);
    }
  }
}
