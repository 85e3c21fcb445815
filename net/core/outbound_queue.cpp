#include "net/core/outbound_queue.hpp"

#include "net/obs/metrics.hpp"

namespace herald::net {

namespace {
// Vectors above this capacity are released once empty (a burst is over).
constexpr std::size_t keep_capacity = 64;

template <class T>
void release_if_large(std::vector<T>& v) {
  if (v.empty() && v.capacity() > keep_capacity)
    std::vector<T>{}.swap(v);
}
} // namespace

outbound_queue::~outbound_queue() {
  if (bytes_ > 0)
    metrics::outbound_bytes(-static_cast<std::int64_t>(bytes_));
}

outbound_queue::watermark outbound_queue::push(std::string&& prefix, frame body,
                                               std::int64_t accepted_ns) {
  // Built in place: a short prefix (a frame header) lives in the string's
  // own buffer, so every move of it is a copy.
  auto& it = items_.emplace_back();
  it.prefix = std::move(prefix);
  it.body = std::move(body);
  it.accepted_ns = accepted_ns;
  auto size = it.size();
  bytes_ += size;
  metrics::outbound_bytes(static_cast<std::int64_t>(size));
  if (!above_ && bytes_ > hwm_) {
    above_ = true;
    return watermark::crossed_high;
  }
  return watermark::none;
}

std::size_t outbound_queue::begin_write(std::vector<std::string_view>& out, std::size_t max_items,
                                        std::size_t max_bytes) {
  std::size_t total = 0;
  while (head_ < items_.size() && flight_.size() < max_items) {
    auto& it = items_[head_];
    if (!flight_.empty() && total + it.size() > max_bytes)
      break;
    total += it.size();
    flight_.push_back(std::move(it));
    ++head_;
  }
  if (head_ == items_.size()) {
    items_.clear();
    head_ = 0;
  } else if (head_ >= 256 && head_ * 2 >= items_.size()) {
    items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  for (const auto& it : flight_) {
    if (!it.prefix.empty())
      out.emplace_back(it.prefix);
    out.emplace_back(*it.body);
  }
  return flight_.size();
}

outbound_queue::watermark outbound_queue::complete_write(std::int64_t now_ns) {
  std::size_t done = 0;
  for (const auto& it : flight_) {
    if (now_ns != 0 && it.accepted_ns != 0)
      metrics::observe(metrics::histogram::publish_to_write, now_ns - it.accepted_ns);
    done += it.size();
  }
  flight_.clear();
  release_if_large(flight_);
  release_if_large(items_);
  bytes_ -= done;
  metrics::outbound_bytes(-static_cast<std::int64_t>(done));
  if (above_ && bytes_ <= hwm_ / 2) {
    above_ = false;
    return watermark::back_to_low;
  }
  return watermark::none;
}

void outbound_queue::drop_pending() {
  std::size_t dropped = 0;
  for (auto i = head_; i < items_.size(); ++i)
    dropped += items_[i].size();
  items_.clear();
  head_ = 0;
  release_if_large(items_);
  bytes_ -= dropped;
  metrics::outbound_bytes(-static_cast<std::int64_t>(dropped));
}

} // namespace herald::net
