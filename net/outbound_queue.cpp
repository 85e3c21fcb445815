#include "net/outbound_queue.hpp"

namespace herald::net {

outbound_queue::watermark outbound_queue::push(std::string prefix, frame body) {
  item it{std::move(prefix), std::move(body)};
  bytes_ += it.size();
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

outbound_queue::watermark outbound_queue::complete_write() {
  for (; in_flight_ > 0; --in_flight_) {
    bytes_ -= items_.front().size();
    items_.pop_front();
  }
  if (above_ && bytes_ <= hwm_ / 2) {
    above_ = false;
    return watermark::back_to_low;
  }
  return watermark::none;
}

void outbound_queue::drop_pending() {
  while (items_.size() > in_flight_) {
    bytes_ -= items_.back().size();
    items_.pop_back();
  }
}

} // namespace herald::net
