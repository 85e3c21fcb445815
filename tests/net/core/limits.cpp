// Pure parts of the abuse limits: the token bucket and the per-address
// connection count (the request-head checks: tests/net/http/request_check.cpp).
#include "net/core/connection_limit.hpp"
#include "net/core/token_bucket.hpp"

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

TEST_CASE("token bucket: rate 0 is no limit, burst 0 behaves as 1", "[limits]") {
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

TEST_CASE("connection limit: IPv4-mapped IPv6 counts as IPv4, 0 is unlimited", "[limits]") {
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
