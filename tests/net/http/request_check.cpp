// The pure part of reading an HTTP request (net/http/request_check): head
// limits, ambiguous framing, routes, and the SSE request's channels and cursor.
#include "net/http/request_check.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>

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
