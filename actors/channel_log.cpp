#include "actors/channel_log.hpp"

#include <iterator>

namespace herald::actors {

void channel_log::append(publication_ptr p) {
  offset = p->offset;
  history.push_back(std::move(p));
  while (history.size() > limits.size)
    history.pop_front();
}

void channel_log::expire(caf::actor_clock::time_point now) {
  while (!history.empty() && now - history.front()->at >= limits.ttl)
    history.pop_front();
}

void channel_log::restart(std::string new_epoch) {
  epoch = std::move(new_epoch);
  offset = 0;
  history.clear();
}

bool channel_log::holds(const publication& p) const {
  if (history.empty() || p.offset < history.front()->offset || p.offset > offset)
    return false;
  const auto i = static_cast<std::size_t>(p.offset - history.front()->offset);
  if (i >= history.size())
    return false;
  const auto& h = history[i];
  return h->offset == p.offset && h->event == p.event && h->data == p.data;
}

recovery channel_log::decide(const std::optional<net::stream_position>& since,
                             bool epoch_history, net::recovery_mode mode,
                             const net::tags_filter* filter) const {
  auto r = decide_stream(since, epoch_history);
  if (mode != net::recovery_mode::cache || history.empty())
    return r;
  if (since ? r.recovered : false)
    return r; // exact: every missed publication (none when up to date)
  // The latest value instead of a gap, or as the first event without a
  // position: with a filter, the newest it matches (Centrifugo's cache
  // recovery does the same), followed by the later ones it refuses.
  auto newest = history.rbegin();
  while (filter != nullptr && newest != history.rend() && !filter->matches(**newest))
    ++newest;
  if (newest == history.rend())
    r.replay.clear();
  else
    r.replay.assign(std::prev(newest.base()), history.end());
  r.cached = true;
  r.reason.clear();
  r.recovered = since.has_value();
  return r;
}

recovery channel_log::decide_stream(const std::optional<net::stream_position>& since,
                                    bool epoch_history) const {
  recovery r;
  if (!since)
    return r;
  if (since->epoch != epoch) {
    r.reason = "epoch_changed";
    if (epoch_history)
      r.replay.assign(history.begin(), history.end()); // all of the current epoch
    return r;
  }
  if (since->offset > offset) {
    r.reason = "offset_in_future";
    return r;
  }
  if (since->offset == offset) {
    r.recovered = true;
    return r;
  }
  // History offsets are contiguous and end at `offset`.
  auto first_needed = since->offset + 1;
  if (history.empty() || history.front()->offset > first_needed) {
    r.reason = "history_expired";
    return r;
  }
  auto skip = first_needed - history.front()->offset;
  r.replay.assign(history.begin() + static_cast<std::ptrdiff_t>(skip), history.end());
  r.recovered = true;
  return r;
}

} // namespace herald::actors
