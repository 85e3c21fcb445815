// backoff: the reconnect delays shared by connection and subscriber.
#include "net/redis/backoff.hpp"

#include <catch2/catch.hpp>

#include <chrono>

using namespace std::chrono_literals;
using herald::net::redis::backoff;

TEST_CASE("backoff: min doubling to max, each delay jittered into [step/2, step]",
          "[redis][backoff]") {
  backoff b(100ms, 1000ms, 42);
  const std::chrono::milliseconds steps[] = {100ms, 200ms, 400ms, 800ms, 1000ms, 1000ms, 1000ms};
  for (auto step : steps) {
    CHECK(b.ceiling() == step);
    auto d = b.next();
    CHECK(d >= step / 2);
    CHECK(d <= step);
  }
}

TEST_CASE("backoff: the jitter spreads the delays", "[redis][backoff]") {
  // Many instances that lost one Redis must not come back in step.
  backoff a(1000ms, 1000ms, 1);
  backoff b(1000ms, 1000ms, 2);
  int differ = 0;
  for (int i = 0; i < 20; ++i)
    differ += a.next() != b.next() ? 1 : 0;
  CHECK(differ > 10);
}

TEST_CASE("backoff: reset only once a connection stayed up max", "[redis][backoff]") {
  backoff b(100ms, 1000ms, 7);
  for (int i = 0; i < 4; ++i)
    b.next();
  REQUIRE(b.ceiling() == 1000ms);
  auto t0 = backoff::clock::time_point{} + 1h;

  // Closed right after its handshake (an ACL refusing the first command):
  // the delays keep their size.
  b.up(t0);
  b.lost(t0 + 999ms);
  CHECK(b.ceiling() == 1000ms);

  // Up for max: the server was healthy, start again from min.
  b.up(t0 + 2s);
  b.lost(t0 + 3s);
  CHECK(b.ceiling() == 100ms);
  CHECK(b.next() <= 100ms);
  CHECK(b.ceiling() == 200ms);
}

TEST_CASE("backoff: a min of 0 still grows, and no delay exceeds max", "[redis][backoff]") {
  backoff b(0ms, 5ms, 3);
  CHECK(b.next() <= 1ms);
  CHECK(b.ceiling() == 1ms);
  for (int i = 0; i < 10; ++i)
    CHECK(b.next() <= 5ms);
  CHECK(b.ceiling() == 5ms);
}
