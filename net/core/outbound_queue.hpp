// outbound_queue: a connection's bounded queue of frames waiting for the
// socket, with high/low-water mark accounting. Pure (no Asio): the sessions
// own one each and run it on their shard thread; tests drive it directly.
//
// Items are (prefix, shared frame) pairs so that a per-connection SSE id line
// can precede a frame shared by every subscriber without copying the frame.
// Each item is one whole client message (an SSE event block, a WebSocket
// message with its header), so dropping an item never cuts a message.
//
// Conflation (overflow policy `conflate`, net/wire/channel_class.hpp,
// docs/protocol.md "Overflow policy"): an item may carry a conflation key
// (one per conflated subscription). At all times a key has at most one
// pending item: a push of a keyed item drops the pending item of the same
// key, if any (counted in herald_conflated_publications_total), and the new
// one goes last, so what follows it in order (an SSE id line names every
// channel's position) stays after it. Items in flight (handed to the socket,
// maybe half written) are never touched; what a write did not hand over
// goes back to the pending items (requeue_unwritten()), where it conflates.
// The high-water mark counts only what conflation cannot shed (items
// without a key, in flight or not), so a connection whose traffic is all
// conflated stays under it and holds at most one pending publication per key
// beyond its write in flight.
// Every queue reports its byte count changes to the herald_outbound_buffer_bytes
// gauge, and each written item that carries the time its publication was
// accepted to the publish-to-write histogram (net/obs/metrics.hpp).
#pragma once

#include "net/wire/frame.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace herald::net {

class outbound_queue {
public:
  /// Watermark transitions reported by push() and complete_write(), of the
  /// bytes conflation cannot shed (fixed_bytes()).
  enum class watermark { none, crossed_high, back_to_low };

  /// Identifies a conflated subscription's items; 0: the item is never dropped.
  using conflation_key = std::uint32_t;

  /// @param high_water_mark bytes; the low-water mark is half of it.
  explicit outbound_queue(std::size_t high_water_mark)
    : hwm_(high_water_mark) {}
  /// Takes what is still queued off the outbound-bytes gauge.
  ~outbound_queue();
  outbound_queue(const outbound_queue&) = delete;
  outbound_queue& operator=(const outbound_queue&) = delete;

  /// Appends an item. @param accepted_ns when the item's publication was
  /// accepted (metrics::now_ns()), 0 for items that are no publication.
  /// @param key 0, or the conflation key of the item's subscription: the
  ///        key's pending item, if any, is dropped (see the class comment).
  /// @returns crossed_high once per episode, when fixed_bytes() passes the
  ///          high-water mark (the session then closes the slow client).
  watermark push(std::string&& prefix, frame body, std::int64_t accepted_ns = 0,
                 conflation_key key = 0);

  /// Selects up to `max_items` queued items (at most `max_bytes`, but always
  /// at least one) for one write and appends their buffers to `out`.
  /// @pre no write in flight and !empty(). @returns the number of items.
  std::size_t begin_write(std::vector<std::string_view>& out, std::size_t max_items,
                          std::size_t max_bytes);

  /// The socket took only `written` bytes (< what begin_write() handed out,
  /// in the order of its buffers): the items it took whole are done, the
  /// one it took part of stays in flight, and the rest go back to the front
  /// of the pending items, in order, where a newer item of the same key
  /// replaces them. @returns the bytes of the write in flight still to be
  /// written (the rest of the item cut by `written`; 0: none was cut, and
  /// nothing is in flight but items written whole).
  /// @pre a write in flight.
  std::size_t requeue_unwritten(std::size_t written);

  /// Removes the items of the write in flight; each one that carries an
  /// accepted time is observed as publish-to-write latency up to `now_ns`
  /// (metrics::now_ns(); 0: observe nothing). @returns back_to_low once per episode.
  watermark complete_write(std::int64_t now_ns = 0);

  /// Drops every item not in flight (used when closing).
  void drop_pending();

  /// Items dropped by conflation since construction.
  std::uint64_t conflated() const noexcept { return conflated_; }

  bool empty() const noexcept { return pending() == 0 && flight_.empty(); }
  bool writing() const noexcept { return !flight_.empty(); }
  /// Items in the write in flight.
  std::size_t in_flight() const noexcept { return flight_.size(); }
  /// Items queued and not in flight.
  std::size_t pending() const noexcept { return items_.size() - head_ - dropped_; }
  /// Bytes queued, in flight included.
  std::size_t bytes() const noexcept { return bytes_; }
  /// Bytes of items without a conflation key, in flight included: what the
  /// high-water mark bounds.
  std::size_t fixed_bytes() const noexcept { return fixed_bytes_; }
  bool above_high_water_mark() const noexcept { return above_; }
  std::size_t high_water_mark() const noexcept { return hwm_; }

private:
  struct item {
    std::string prefix;
    frame body;
    std::int64_t accepted_ns; ///< 0: not a publication
    conflation_key key;       ///< 0: never dropped
    std::size_t size() const noexcept { return prefix.size() + body->size(); }
  };

  /// Where a key's pending item is: its position counted from the first
  /// item the queue ever held (items_[position - base_]).
  struct keyed_slot {
    conflation_key key;
    std::size_t position;
  };
  /// Drops the pending item at items_[i] (conflated): a hole that
  /// begin_write() skips, until compact() removes the holes.
  void drop_conflated(item& it);
  /// Removes the holes from the pending items and finds each key's slot
  /// anew; where a key has more than one pending item (after a requeue), only
  /// the newest stays.
  void compact();
  /// Takes `it`, leaving the queue (written or dropped), off the counters.
  void account_removed(const item& it) noexcept;
  /// Waiting items are items_[head_..]; the write in flight owns its items in
  /// flight_, which nothing touches until complete_write(), so the buffers
  /// handed to the socket stay valid however items_ grows (a short prefix
  /// lives inside its item). Two vectors: an idle connection's queue holds no
  /// memory at all (a std::deque holds ~600 bytes even when empty).
  std::vector<item> items_;
  std::size_t head_ = 0;
  std::size_t base_ = 0;    ///< position of items_[0] (see keyed_slot)
  std::size_t dropped_ = 0; ///< holes (conflated items) in items_[head_..]
  std::vector<item> flight_;
  std::vector<keyed_slot> slots_; ///< one per key with a pending item (few: a flat list)
  std::size_t bytes_ = 0;
  std::size_t fixed_bytes_ = 0; ///< bytes of items without a key
  std::uint64_t conflated_ = 0;
  std::size_t hwm_;
  bool above_ = false;
};

} // namespace herald::net
