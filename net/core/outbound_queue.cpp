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
  if (key != 0) {
    // At most one pending item per key: the older one goes, the new one
    // goes last (after whatever was queued meanwhile).
    auto slot = std::find_if(slots_.begin(), slots_.end(),
                             [key](const keyed_slot& s) { return s.key == key; });
    if (slot != slots_.end()) {
      if (slot->position >= base_ + head_)
        drop_conflated(items_[slot->position - base_]);
      slot->position = base_ + items_.size();
    } else {
      slots_.push_back({key, base_ + items_.size()});
    }
  }
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
  // Holes cost a little memory each: removed once they are most of what waits.
  if (dropped_ > 32 && dropped_ * 2 > items_.size() - head_)
    compact();
  if (!above_ && fixed_bytes_ > hwm_) {
    above_ = true;
    return watermark::crossed_high;
  }
  return watermark::none;
}

void outbound_queue::drop_conflated(item& it) {
  account_removed(it);
  ++conflated_;
  metrics::conflated();
  it.body = nullptr; // a hole
  it.prefix = {};
  ++dropped_;
}

void outbound_queue::compact() {
  // Newest first: the first item met of a key is kept, older ones go (only
  // after a requeue can a key have two). A connection has few conflated
  // subscriptions, so a flat list of the keys met beats a set.
  slots_.clear();
  for (auto i = items_.size(); i-- > head_;) {
    auto& it = items_[i];
    if (it.key == 0 || it.body == nullptr)
      continue;
    if (std::none_of(slots_.begin(), slots_.end(),
                     [&](const keyed_slot& s) { return s.key == it.key; })) {
      slots_.push_back({it.key, i}); // an index for now, positions below
      continue;
    }
    drop_conflated(it);
  }
  if (dropped_ > 0) {
    // Holes out, order kept; the kept items' indices move down.
    std::size_t to = head_;
    for (auto from = head_; from < items_.size(); ++from) {
      if (items_[from].body == nullptr)
        continue;
      for (auto& s : slots_)
        if (s.position == from)
          s.position = to;
      if (to != from)
        items_[to] = std::move(items_[from]);
      ++to;
    }
    items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(to), items_.end());
    dropped_ = 0;
  }
  for (auto& s : slots_)
    s.position += base_;
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
    if (it.body == nullptr) { // a hole: conflated, already off the counters
      --dropped_;
      ++head_;
      continue;
    }
    if (!flight_.empty() && total + it.size() > max_bytes)
      break;
    total += it.size();
    flight_.push_back(std::move(it));
    ++head_;
  }
  if (head_ == items_.size()) {
    base_ += items_.size();
    items_.clear();
    head_ = 0;
    slots_.clear(); // no pending item left
  } else if (head_ >= 256 && head_ * 2 >= items_.size()) {
    items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
    base_ += head_;
    head_ = 0;
  }
  for (const auto& it : flight_) {
    if (!it.prefix.empty())
      out.emplace_back(it.prefix);
    out.emplace_back(*it.body);
  }
  return flight_.size();
}

std::size_t outbound_queue::requeue_unwritten(std::size_t written) {
  // The items the socket took whole, then the one it cut (if any).
  std::size_t keep = 0;
  std::size_t rest = 0;
  while (keep < flight_.size() && written > 0) {
    const auto size = flight_[keep].size();
    if (written < size)
      rest = size - written;
    written -= std::min(written, size);
    ++keep;
  }
  if (keep == flight_.size())
    return rest;
  // Back in front of the pending items, in order. Rare (a socket that is
  // full): the simple way, then compact() finds the keys' slots anew and
  // lets a newer item of a key replace its requeued one.
  items_.insert(items_.begin() + static_cast<std::ptrdiff_t>(head_),
                std::make_move_iterator(flight_.begin() + static_cast<std::ptrdiff_t>(keep)),
                std::make_move_iterator(flight_.end()));
  flight_.erase(flight_.begin() + static_cast<std::ptrdiff_t>(keep), flight_.end());
  compact();
  return rest;
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
    if (items_[i].body != nullptr)
      account_removed(items_[i]);
  base_ += items_.size();
  items_.clear();
  head_ = 0;
  dropped_ = 0;
  slots_.clear();
  release_if_large(items_);
}

} // namespace herald::net
