#include "loadtest/subscription_track.hpp"

#include <utility>

namespace herald::loadtest {

void subscription_track::restart_at(std::uint64_t head) noexcept {
  last_offset = head;
  seen_mask = 1;
  offset_known = true;
}

bool subscription_track::on_subscribed(bool resume, bool recovered, std::string new_epoch,
                                       std::uint64_t head) {
  subscribed = true;
  bool asked = asks_recovery(resume);
  if (!asked || !recovered || new_epoch != epoch) {
    // Live from the head: the next publication has offset head + 1.
    epoch = std::move(new_epoch);
    restart_at(head);
  }
  return asked && !recovered;
}

void subscription_track::check(bool has_offset, std::uint64_t offset, std::uint64_t seq,
                               delivery_counters& c) noexcept {
  bool dup = false;
  bool late = false;
  if (has_offset && offset_known) {
    if (offset > last_offset) {
      auto d = offset - last_offset;
      if (d > 1)
        c.offset_gaps += d - 1;
      seen_mask = d >= 64 ? 1 : (seen_mask << d) | 1;
      last_offset = offset;
      if (seq_known && seq < last_seq)
        late = true; // offsets advance but the publisher sent it earlier
    } else {
      auto d = last_offset - offset;
      if (d < 64 && (seen_mask >> d) & 1u) {
        dup = true;
      } else {
        late = true;
        if (d < 64)
          seen_mask |= std::uint64_t{1} << d;
        if (c.offset_gaps > 0)
          --c.offset_gaps; // it fills a gap counted earlier
      }
    }
  } else if (has_offset) {
    restart_at(offset);
  } else if (seq_known) {
    // No offsets (a server without cursors): the sequence number decides.
    if (seq == last_seq)
      dup = true;
    else if (seq < last_seq)
      late = true;
  }
  if (dup)
    ++c.duplicates;
  else if (late)
    ++c.out_of_order;
  if (!seq_known || seq > last_seq)
    last_seq = seq;
  seq_known = true;
}

} // namespace herald::loadtest
