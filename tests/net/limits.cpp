// Pure parts of the abuse limits: the token bucket, the per-address
// connection count, and the request-head checks (net/http/request_check).
#include "net/connection_limit.hpp"
#include "net/http/request_check.hpp"
#include "net/token_bucket.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>

using namespace herald;
using namespace herald::net;
using namespace std::chrono_literals;

TEST_CASE("token bucket: burst, then the refill rate", "[limits]") {
  auto t0 = token_bucket::clock::time_point{} + 1h;
  token_bucket b{2.0, 5, t0};
  for (int i = 0; i < 5; ++i)
    CHECK(b.take(t0));
  CHECK_FALSE(b.take(t0));
  CHECK_FALSE(b.take(t0 + 400ms)); // 0.8 tokens
  CHECK(b.take(t0 + 500ms));       // 1.0 token
  CHECK_FALSE(b.take(t0 + 500ms));
  // Never more than the burst, however long the pause.
  auto later = t0 + 1h;
  for (int i = 0; i < 5; ++i)
    CHECK(b.take(later));
  CHECK_FALSE(b.take(later));
  // A clock that goes backwards adds nothing.
  CHECK_FALSE(b.take(t0));
}

TEST_CASE("token bucket: rate 0 is no limit; burst 0 behaves as 1", "[limits]") {
  auto t0 = token_bucket::clock::now();
  token_bucket off{0, 1, t0};
  for (int i = 0; i < 10'000; ++i)
    REQUIRE(off.take(t0));
  token_bucket one{1, 0, t0};
  CHECK(one.take(t0));
  CHECK_FALSE(one.take(t0));
}

TEST_CASE("connection limit: per address, released with the token", "[limits]") {
  auto limit = connection_limit::create(2);
  auto a = asio::ip::make_address("127.0.0.2");
  auto b = asio::ip::make_address("127.0.0.3");
  auto t1 = limit->acquire(a);
  auto t2 = limit->acquire(a);
  REQUIRE(t1);
  REQUIRE(t2);
  CHECK_FALSE(limit->acquire(a));
  CHECK(limit->count(a) == 2);
  auto other = limit->acquire(b);
  CHECK(other);
  // Copies of a token hold one slot; the last copy gives it back.
  auto copy = t1;
  t1.reset();
  CHECK(limit->count(a) == 2);
  copy.reset();
  CHECK(limit->count(a) == 1);
  CHECK(limit->acquire(a));
}

TEST_CASE("connection limit: IPv4-mapped IPv6 counts as IPv4; 0 is unlimited", "[limits]") {
  auto limit = connection_limit::create(1);
  auto v4 = limit->acquire(asio::ip::make_address("10.1.2.3"));
  REQUIRE(v4);
  CHECK_FALSE(limit->acquire(asio::ip::make_address("::ffff:10.1.2.3")));
  CHECK(limit->acquire(asio::ip::make_address("::1")));
  auto none = connection_limit::create(0);
  for (int i = 0; i < 100; ++i)
    REQUIRE(none->acquire(asio::ip::make_address("127.0.0.1")));
}

TEST_CASE("connection limit: a token outlives its limit object", "[limits]") {
  std::shared_ptr<void> token;
  {
    auto limit = connection_limit::create(1);
    token = limit->acquire(asio::ip::make_address("127.0.0.1"));
  }
  REQUIRE(token);
  token.reset(); // no use after free (run under ASan)
}

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
  CHECK(http::check_head(with_te({"chunked", "chunked"}, false), 100, detail)
        == errc::invalid_request);
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
    CHECK(http::parse_sse_request("/v1/sse?channel=stream:", nullptr, 64, sub, detail)
          == errc::invalid_channel);
  }
  {
    sse_subscription sub;
    CHECK(http::parse_sse_request("/v1/sse?channel=stream:1&channel=stream:2", nullptr, 1, sub,
                                  detail)
          == errc::too_many_channels);
  }
  {
    // The header wins over the query parameter.
    sse_subscription sub;
    std::string_view header = "7ae5332b-u81bgp9q1gin-4";
    CHECK(http::parse_sse_request("/v1/sse?channel=stream:1&last_event_id=bad", &header, 64, sub,
                                  detail)
          == errc::none);
    CHECK(sub.has_cursor);
    REQUIRE(sub.cursor.size() == 1);
    CHECK(sub.cursor[0].position.offset == 4);
  }
  {
    sse_subscription sub;
    std::string_view header = "";
    CHECK(http::parse_sse_request("/v1/sse?channel=stream:1", &header, 64, sub, detail)
          == errc::invalid_cursor);
  }
}
