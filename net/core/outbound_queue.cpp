#include "net/core/outbound_queue.hpp"

#include "net/obs/metrics.hpp"

#include <algorithm>

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
                                               std::int64_t accepted_ns, conflation_key key) {
  // Built in place: a short prefix (a frame header) lives in the string's
  // own buffer, so every move of it is a copy.
  auto& it = items_.emplace_back();
  it.prefix = std::move(prefix);
  it.body = std::move(body);
  it.accepted_ns = accepted_ns;
  it.key = key;
  auto size = it.size();
  bytes_ += size;
  metrics::outbound_bytes(static_cast<std::int64_t>(size));
  if (key == 0)
    fixed_bytes_ += size;
  else
    ++keyed_pending_;
  // Conflate only over the mark: a short burst under it reaches the client
  // in full. keyed_pending_ > 1: at least two items that could share a key.
  if (bytes_ > hwm_ && keyed_pending_ > 1)
    conflate_pending();
  if (!above_ && fixed_bytes_ > hwm_) {
    above_ = true;
    return watermark::crossed_high;
  }
  return watermark::none;
}

void outbound_queue::conflate_pending() {
  // Newest first: the first item met of a key is kept, the older ones go.
  // A connection has few conflated subscriptions, so a flat list of the
  // keys met beats a set.
  seen_.clear();
  bool any = false;
  for (auto i = items_.size(); i-- > head_;) {
    auto& it = items_[i];
    if (it.key == 0)
      continue;
    if (std::find(seen_.begin(), seen_.end(), it.key) == seen_.end()) {
      seen_.push_back(it.key);
      continue;
    }
    account_removed(it);
    --keyed_pending_;
    ++conflated_;
    metrics::conflated();
    it.body = nullptr; // marks it dropped
    any = true;
  }
  if (!any)
    return;
  items_.erase(std::remove_if(items_.begin() + static_cast<std::ptrdiff_t>(head_), items_.end(),
                              [](const item& it) { return it.body == nullptr; }),
               items_.end());
}

void outbound_queue::account_removed(const item& it) noexcept {
  const auto size = it.size();
  bytes_ -= size;
  if (it.key == 0)
    fixed_bytes_ -= size;
  metrics::outbound_bytes(-static_cast<std::int64_t>(size));
}

std::size_t outbound_queue::begin_write(std::vector<std::string_view>& out, std::size_t max_items,
                                        std::size_t max_bytes) {
  std::size_t total = 0;
  while (head_ < items_.size() && flight_.size() < max_items) {
    auto& it = items_[head_];
    if (!flight_.empty() && total + it.size() > max_bytes)
      break;
    total += it.size();
    if (it.key != 0)
      --keyed_pending_; // in flight: no longer conflated
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
  std::size_t fixed_done = 0;
  for (const auto& it : flight_) {
    if (now_ns != 0 && it.accepted_ns != 0)
      metrics::observe(metrics::histogram::publish_to_write, now_ns - it.accepted_ns);
    const auto size = it.size();
    done += size;
    if (it.key == 0)
      fixed_done += size;
  }
  flight_.clear();
  bytes_ -= done;
  fixed_bytes_ -= fixed_done;
  metrics::outbound_bytes(-static_cast<std::int64_t>(done));
  release_if_large(flight_);
  release_if_large(items_);
  if (above_ && fixed_bytes_ <= hwm_ / 2) {
    above_ = false;
    return watermark::back_to_low;
  }
  return watermark::none;
}

void outbound_queue::drop_pending() {
  for (auto i = head_; i < items_.size(); ++i)
    account_removed(items_[i]);
  items_.clear();
  head_ = 0;
  keyed_pending_ = 0;
  release_if_large(items_);
}

} // namespace herald::net
