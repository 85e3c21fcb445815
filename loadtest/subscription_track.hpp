// One subscription as a subscriber sees it (one channel of one connection):
// its stream position, and the checks every delivery on it goes through.
//
// Order and duplicates are judged by offset where the delivery carries one
// (Herald's SSE cursor entry, the WebSocket or Centrifugo `offset`), with a
// window of the last 64 offsets; offsets skipped count as gaps until a late
// arrival fills them. Where the server gives no offsets (the baseline), the
// publication's `seq` decides. Pure bookkeeping: no socket, no clock. The
// subscriber (subscriber.hpp) owns one per channel and calls it on its
// worker's thread; the counters it updates are the worker's.
#pragma once

#include <cstdint>
#include <string>

namespace herald::loadtest {

/// Delivery counters of all subscribers of one worker.
struct delivery_counters {
  std::uint64_t received = 0;     ///< publication deliveries (each channel counts)
  std::uint64_t duplicates = 0;   ///< deliveries of an offset/seq already received
  std::uint64_t out_of_order = 0; ///< deliveries older than one already received
  std::uint64_t offset_gaps = 0;  ///< offsets skipped when a later one arrived
  std::uint64_t gap_notices = 0;  ///< explicit gap notices from the server
  std::uint64_t unparsed = 0;     ///< events that carried no seq/t, or an unknown channel
  std::uint64_t bytes = 0;        ///< bytes read
  std::int64_t first_recv_ns = 0; ///< first delivery (CLOCK_MONOTONIC)
  std::int64_t last_recv_ns = 0;  ///< latest delivery
};

/// The position and checks of one (connection, channel) pair.
struct subscription_track {
  int id = 0;                    ///< channel id (channel_plan numbering)
  std::uint64_t last_offset = 0; ///< highest offset received
  std::uint64_t seen_mask = 0;   ///< bit i: offset last_offset - i received
  std::uint64_t last_seq = 0;    ///< highest seq received
  std::string epoch;             ///< WebSocket/Centrifugo: epoch of the subscription
  bool offset_known = false;
  bool seq_known = false;
  bool subscribed = false; ///< WebSocket/Centrifugo: the subscribe answer arrived
  /// Centrifugo with delta "fossil": the data of the last publication, the
  /// base the next delta applies to.
  std::string delta_base;

  /// True when a subscribe sent now asks to recover from the last position:
  /// `resume` (the attempt resumes after a drop) and an epoch is known.
  bool asks_recovery(bool resume) const noexcept { return resume && !epoch.empty(); }

  /// Live from offset `head`: the next publication has offset `head + 1`;
  /// forgets which earlier offsets arrived.
  void restart_at(std::uint64_t head) noexcept;

  /// The server answered this subscription's subscribe (WebSocket
  /// `subscribed`, Centrifugo subscribe reply): marks it subscribed and, unless
  /// it recovered within the epoch it asked for, restarts live at `head`
  /// (taking `epoch`). Call once per attempt, with the `resume` the request
  /// was built with. Returns true when a recovery was asked for and refused
  /// (`recovered` false): a gap the caller counts.
  bool on_subscribed(bool resume, bool recovered, std::string epoch, std::uint64_t head);

  /// Checks one delivery of publication `seq` and updates the position.
  /// @param has_offset whether the delivery carries the channel's offset
  /// @param offset     that offset (ignored without `has_offset`)
  /// @param seq        the publication's sequence number (its data's `seq`)
  /// @param c          gets `duplicates`, `out_of_order` and `offset_gaps`
  ///                   (a late arrival takes back one gap counted earlier);
  ///                   `received` and the times are the caller's
  void check(bool has_offset, std::uint64_t offset, std::uint64_t seq,
             delivery_counters& c) noexcept;
};

} // namespace herald::loadtest
