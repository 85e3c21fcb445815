#include "loadtest/histogram.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace herald::loadtest {

namespace {
constexpr std::uint64_t sub_count = std::uint64_t{1} << histogram::sub_bits;
constexpr std::uint64_t half_count = sub_count / 2;
} // namespace

histogram::histogram()
  : counts_(bucket_count, 0) {}

std::size_t histogram::index_of(std::uint64_t v) noexcept {
  if (v < sub_count)
    return static_cast<std::size_t>(v);
  unsigned e = 63u - static_cast<unsigned>(__builtin_clzll(v)); // >= sub_bits
  unsigned shift = e - sub_bits + 1;
  std::uint64_t m = v >> shift; // in [half_count, sub_count)
  return static_cast<std::size_t>(sub_count + (e - sub_bits) * half_count + (m - half_count));
}

std::uint64_t histogram::lowest_of(std::size_t i) noexcept {
  if (i < sub_count)
    return i;
  std::uint64_t k = i - sub_count;
  unsigned e = static_cast<unsigned>(k / half_count) + sub_bits;
  std::uint64_t m = k % half_count + half_count;
  return m << (e - sub_bits + 1);
}

std::uint64_t histogram::highest_of(std::size_t i) noexcept {
  if (i < sub_count)
    return i;
  std::uint64_t k = i - sub_count;
  unsigned e = static_cast<unsigned>(k / half_count) + sub_bits;
  unsigned shift = e - sub_bits + 1;
  return lowest_of(i) + ((std::uint64_t{1} << shift) - 1);
}

void histogram::record(std::uint64_t v) noexcept {
  record_n(v, 1);
}

void histogram::record_n(std::uint64_t v, std::uint64_t n) noexcept {
  if (n == 0)
    return;
  counts_[index_of(v)] += n;
  if (count_ == 0 || v < min_)
    min_ = v;
  if (v > max_)
    max_ = v;
  count_ += n;
  sum_ += static_cast<double>(v) * static_cast<double>(n);
}

void histogram::merge(const histogram& other) noexcept {
  if (other.count_ == 0)
    return;
  for (std::size_t i = 0; i < bucket_count; ++i)
    counts_[i] += other.counts_[i];
  if (count_ == 0 || other.min_ < min_)
    min_ = other.min_;
  max_ = std::max(max_, other.max_);
  count_ += other.count_;
  sum_ += other.sum_;
}

void histogram::reset() noexcept {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = min_ = max_ = 0;
  sum_ = 0;
}

double histogram::mean() const noexcept {
  return count_ ? sum_ / static_cast<double>(count_) : 0.0;
}

std::uint64_t histogram::value_at_quantile(double q) const noexcept {
  if (count_ == 0)
    return 0;
  q = std::clamp(q, 0.0, 1.0);
  auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::clamp<std::uint64_t>(rank, 1, count_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < bucket_count; ++i) {
    seen += counts_[i];
    if (seen >= rank)
      return std::min(std::max(highest_of(i), min_), max_);
  }
  return max_;
}

std::vector<std::pair<std::uint64_t, double>> histogram::cdf() const {
  std::vector<std::pair<std::uint64_t, double>> out;
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < bucket_count; ++i) {
    if (counts_[i] == 0)
      continue;
    seen += counts_[i];
    out.emplace_back(std::min(highest_of(i), max_),
                     static_cast<double>(seen) / static_cast<double>(count_));
  }
  return out;
}

nlohmann::json histogram::to_json() const {
  auto buckets = nlohmann::json::array();
  for (std::size_t i = 0; i < bucket_count; ++i)
    if (counts_[i] != 0)
      buckets.push_back({i, counts_[i]});
  return {{"n", count_}, {"min", min()}, {"max", max_}, {"sum", sum_}, {"b", std::move(buckets)}};
}

histogram histogram::from_json(const nlohmann::json& j) {
  histogram h;
  for (const auto& b : j.at("b")) {
    auto i = b.at(0).get<std::size_t>();
    if (i >= bucket_count)
      throw std::invalid_argument("histogram bucket index out of range");
    h.counts_[i] += b.at(1).get<std::uint64_t>();
  }
  h.count_ = j.at("n").get<std::uint64_t>();
  h.min_ = j.at("min").get<std::uint64_t>();
  h.max_ = j.at("max").get<std::uint64_t>();
  h.sum_ = j.at("sum").get<double>();
  return h;
}

} // namespace herald::loadtest
