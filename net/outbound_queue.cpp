#include "net/outbound_queue.hpp"

#include "net/metrics.hpp"

namespace herald::net {

outbound_queue::~outbound_queue() {
  if (bytes_ > 0)
    metrics::outbound_bytes(-static_cast<std::int64_t>(bytes_));
}

outbound_queue::watermark outbound_queue::push(std::string prefix, frame body,
                                               std::int64_t accepted_ns) {
  item it{std::move(prefix), std::move(body), accepted_ns};
  auto size = it.size();
  bytes_ += size;
  metrics::outbound_bytes(static_cast<std::int64_t>(size));
  items_.push_back(std::move(it));
  if (!above_ && bytes_ > hwm_) {
    above_ = true;
    return watermark::crossed_high;
  }
  return watermark::none;
}

std::size_t outbound_queue::begin_write(std::vector<std::string_view>& out,
                                        std::size_t max_items, std::size_t max_bytes) {
  std::size_t n = 0, total = 0;
  for (auto& it : items_) {
    if (n == max_items || (n > 0 && total + it.size() > max_bytes))
      break;
    if (!it.prefix.empty())
      out.emplace_back(it.prefix);
    out.emplace_back(*it.body);
    total += it.size();
    ++n;
  }
  in_flight_ = n;
  return n;
}

outbound_queue::watermark outbound_queue::complete_write(std::int64_t now_ns) {
  std::size_t done = 0;
  for (; in_flight_ > 0; --in_flight_) {
    const auto& front = items_.front();
    if (now_ns != 0 && front.accepted_ns != 0)
      metrics::observe(metrics::histogram::publish_to_write, now_ns - front.accepted_ns);
    done += front.size();
    items_.pop_front();
  }
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
  while (items_.size() > in_flight_) {
    dropped += items_.back().size();
    items_.pop_back();
  }
  bytes_ -= dropped;
  metrics::outbound_bytes(-static_cast<std::int64_t>(dropped));
}

} // namespace herald::net
