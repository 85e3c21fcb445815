// Log-linear ("HDR-style") histogram of non-negative integers, used for
// latencies and connect times in nanoseconds.
//
// Values below 2^sub_bits are counted exactly; above, every power of two is
// split into 2^(sub_bits-1) equal sub-buckets, so a bucket is never wider than
// 1/128 of the values it holds (relative error < 0.8 % with sub_bits = 8).
// The whole uint64 range fits in 7,424 counters. Histograms from several
// processes merge by adding counters; they travel between processes as
// sparse JSON.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace herald::loadtest {

class histogram {
public:
  /// log2 of the linear sub-buckets per power of two (precision).
  static constexpr unsigned sub_bits = 8;
  /// Number of counters (covers every uint64 value).
  static constexpr std::size_t bucket_count =
    (std::size_t{1} << sub_bits) + (64 - sub_bits) * (std::size_t{1} << (sub_bits - 1));

  histogram();

  /// Counts one value. Never fails.
  void record(std::uint64_t v) noexcept;
  /// Counts `n` occurrences of a value.
  void record_n(std::uint64_t v, std::uint64_t n) noexcept;
  /// Adds every count of `other` to this histogram.
  void merge(const histogram& other) noexcept;
  /// Forgets every value.
  void reset() noexcept;

  /// Number of values recorded.
  std::uint64_t count() const noexcept { return count_; }
  /// Smallest value recorded (0 when empty).
  std::uint64_t min() const noexcept { return count_ ? min_ : 0; }
  /// Largest value recorded, exactly (0 when empty).
  std::uint64_t max() const noexcept { return max_; }
  /// Arithmetic mean of the recorded values (0 when empty).
  double mean() const noexcept;

  /// The value at quantile `q` in [0, 1]: the highest value equivalent to
  /// the bucket holding the ceil(q * count)-th smallest value, never above
  /// max(). q = 1 gives max(); an empty histogram gives 0.
  std::uint64_t value_at_quantile(double q) const noexcept;

  /// Cumulative distribution as (value, fraction of values <= value) for
  /// every non-empty bucket, in increasing value order (for plots).
  std::vector<std::pair<std::uint64_t, double>> cdf() const;

  /// Sparse JSON: {"n":count,"min":..,"max":..,"sum":..,"b":[[index,count],...]}.
  nlohmann::json to_json() const;
  /// Inverse of to_json. Throws nlohmann::json::exception or
  /// std::invalid_argument on malformed input.
  static histogram from_json(const nlohmann::json& j);

  /// Counter index of a value.
  static std::size_t index_of(std::uint64_t v) noexcept;
  /// Smallest value counted in bucket `i`.
  static std::uint64_t lowest_of(std::size_t i) noexcept;
  /// Largest value counted in bucket `i`.
  static std::uint64_t highest_of(std::size_t i) noexcept;

private:
  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0;
  std::uint64_t min_ = 0;
  std::uint64_t max_ = 0;
  double sum_ = 0;
};

} // namespace herald::loadtest
