// The log-linear histogram: bucket bounds, precision, quantiles, merging
// and the JSON round trip used between processes.
#include "loadtest/histogram.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <random>

using herald::loadtest::histogram;

TEST_CASE("histogram buckets cover every value with bounded relative error") {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    std::uint64_t v = rng() >> (rng() % 64);
    auto idx = histogram::index_of(v);
    REQUIRE(idx < histogram::bucket_count);
    REQUIRE(histogram::lowest_of(idx) <= v);
    REQUIRE(v <= histogram::highest_of(idx));
    auto width = histogram::highest_of(idx) - histogram::lowest_of(idx);
    REQUIRE(static_cast<double>(width) <= static_cast<double>(v) / 128.0 + 1);
  }
  REQUIRE(histogram::index_of(~0ull) == histogram::bucket_count - 1);
  REQUIRE(histogram::index_of(0) == 0);
  REQUIRE(histogram::index_of(255) == 255);
  REQUIRE(histogram::lowest_of(histogram::index_of(256)) == 256);
}

TEST_CASE("histogram quantiles are within the bucket precision") {
  histogram h;
  for (std::uint64_t v = 1; v <= 100000; ++v)
    h.record(v * 1000); // 1 us .. 100 ms
  REQUIRE(h.count() == 100000);
  REQUIRE(h.min() == 1000);
  REQUIRE(h.max() == 100000000);
  auto near = [](std::uint64_t got, double want) {
    return static_cast<double>(got) >= want && static_cast<double>(got) <= want * 1.01;
  };
  REQUIRE(near(h.value_at_quantile(0.5), 50e6));
  REQUIRE(near(h.value_at_quantile(0.99), 99e6));
  REQUIRE(near(h.value_at_quantile(0.999), 99.9e6));
  REQUIRE(h.value_at_quantile(1.0) == h.max());
  REQUIRE(h.value_at_quantile(0.0) >= h.min());
  REQUIRE(h.mean() == Approx(50.0005e6));
}

TEST_CASE("histograms merge and travel as JSON") {
  histogram a, b;
  for (int i = 0; i < 1000; ++i)
    a.record(static_cast<std::uint64_t>(i) * 10);
  b.record_n(5'000'000, 10);
  a.merge(b);
  REQUIRE(a.count() == 1010);
  REQUIRE(a.max() == 5'000'000);
  auto back = histogram::from_json(nlohmann::json::parse(a.to_json().dump()));
  REQUIRE(back.count() == a.count());
  REQUIRE(back.min() == a.min());
  REQUIRE(back.max() == a.max());
  for (double q : {0.1, 0.5, 0.9, 0.99, 0.999})
    REQUIRE(back.value_at_quantile(q) == a.value_at_quantile(q));
  auto cdf = back.cdf();
  REQUIRE(cdf.back().second == Approx(1.0));
  histogram empty;
  REQUIRE(empty.value_at_quantile(0.99) == 0);
  REQUIRE(empty.cdf().empty());
}
