// subscription_table: a session's per-channel delivery state, kept on the
// session's shard thread (pure: no Asio, no clock; tests drive it directly).
//
// For each channel the connection subscribed to it holds the position (epoch,
// offset) of the last publication written to the client. It turns what the
// channels send (net/fanout.hpp: answers with their replay, live
// publications) into what the client reads, in order:
//  - a publication at or below the position is dropped (the seam between a
//    recovery's replay and live delivery; and a publication that reached the
//    session before its channel's answer);
//  - an offset jump is written as a gap ("missed_publications"), a new epoch
//    as a gap ("epoch_changed"), never silently;
// Which bytes it writes comes from the connection's codec
// (net/wire/session_codec.hpp), chosen once when the stream opened; the table
// never asks which transport or dialect it is, only what the codec says:
//  - carries_cursor() (SSE): every event carries the `id:` line of the cursor of all the
//    connection's channels (net/wire/sse/cursor.hpp), and nothing is written until
//    every channel of the request answered, so the first id names them all;
//    when the answers bring no replay and no gap, an event with only the id
//    line ("id: <cursor>\n\n") is written then: the client has its cursor
//    from the first event on, empty channels included;
//  - otherwise (WebSocket): the subscribe reply (docs/protocol.md), then the
//    replay; an unsubscribe while the subscribe is pending answers it
//    `cancelled`; a subscribe its channel does not answer by its due time
//    is answered `unavailable` when the session calls give_up_overdue();
//  - replay_in_reply() (Centrifugo, docs/centrifugo.md): the subscribe
//    reply carries the replay in its `publications`; a recovery that failed
//    with flag bit 2 is answered with error 112 and the entry dropped;
//  - gap_ends_subscription() (Centrifugo): a live gap is an `unsubscribe`
//    push with code 2500 after which the entry delivers nothing until the
//    client subscribes again (and recovers).
// A subscription may have a filter (net/wire/tags_filter.hpp: Centrifugo's
// `tf`, /v1/ws's `filter`, SSE's `?event=`): a publication it refuses is not
// written, live, replayed or recovered alike, but still advances the
// entry's position, as if written: no gap is reported for it, the SSE
// cursor of the next event names it, and a recovery from that cursor does
// not send it again.
// Overflow policy (net/wire/channel_class.hpp): a subscription whose answer
// says `conflate` gets a conflation key, which every publication it writes
// carries to the outbound queue (net/core/outbound_queue.hpp): over the
// high-water mark the queue keeps only the newest pending one per key. The
// position here is that of the last publication *written to the queue*, so
// what the queue drops never looks like a gap (offsets jump without a gap
// notice, as docs/protocol.md "Overflow policy" says), and an SSE id line
// written later covers the dropped ones. Such a subscription never uses
// delta compression (a delta needs the publication before it, which the
// queue may drop); the reply says `conflated` where the codec can (/v1/ws),
// and SSE names the conflated channels in its `herald.cursor` event.
// The table owns what the client sees of each subscription (request number,
// pending command id, active, position); the connection actor keeps only the
// channel actors and its auth and limit decisions. What it writes goes to an
// output the session implements.
#pragma once

#include "net/core/outbound_queue.hpp"
#include "net/fanout.hpp"
#include "net/obs/metrics.hpp"
#include "net/wire/session_codec.hpp"
#include "net/wire/sse/cursor.hpp"
#include "net/wire/tags_filter.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace herald::net {

class subscription_table {
public:
  using transport = metrics::transport;

  using time_point = std::chrono::steady_clock::time_point;
  using conflation_key = outbound_queue::conflation_key;

  /// Where the table writes (the session's outbound queue).
  class output {
  public:
    virtual ~output() = default;
    /// A publication for the client: `prefix` (WebSocket: the frame header
    /// of `body`; SSE: the `id:` line of the cursor), then `body`, the
    /// codec's shared bytes of `p`.
    /// @param accepted_ns publish-to-write latency origin; 0 for a replay.
    /// @param key 0, or the conflation key of a subscription whose overflow
    ///        policy is conflate (outbound_queue::push): unique per
    ///        subscription within the table's life.
    virtual void write_publication(const publication& p, std::string prefix, const frame& body,
                                   std::int64_t accepted_ns, conflation_key key) = 0;
    /// A notice or reply: one message of the codec (SSE an event block
    /// preceded by `id_line`; WebSocket one message, `id_line` empty).
    virtual void write_message(std::string id_line, std::string body) = 0;
  };

  /// @param kind the metrics label of what the table delivers.
  /// @param codec what the client reads (a static or session-owned codec
  ///        that outlives the table).
  subscription_table(transport kind, const session_codec& codec, output& out)
    : kind_(kind),
      codec_(&codec),
      cursor_(codec.carries_cursor()),
      out_(out) {}

  /// Replaces the codec (call before the first begin() or expect()).
  void set_codec(const session_codec& codec) noexcept {
    codec_ = &codec;
    cursor_ = codec.carries_cursor();
  }

  /// SSE: the channels of the request (valid, distinct, in request order)
  /// and the client's cursor (entries of other channels are ignored). Holds
  /// everything back until each of them answered. Call once, before any answer.
  /// `filter` (may be null: none) applies to every channel of the request.
  void begin(const std::vector<std::string>& channels,
             const std::vector<sse::cursor_entry>& cursor, tags_filter_ptr filter = nullptr);

  /// WebSocket: a subscribe is on its way to `channel` as the connection's
  /// request number `request`; `id` is the client's command id, echoed in the
  /// reply; `since` the client's position to recover from (may be empty).
  /// Replaces an entry of the same channel (a renewed subscribe); if that
  /// entry's subscribe is still pending, it is answered first, with the error
  /// forget() writes (its channel's answer would be stale): every id gets
  /// exactly one reply.
  /// `reject_unrecovered`: Centrifugo flag bit 2, a failed recovery is
  /// answered with error 112 instead of a subscribe reply.
  /// `due`: when give_up_overdue() gives the subscribe up if its channel has
  /// not answered (cluster mode); the default: never.
  /// `delta`: the client asked for delta compression and the codec
  /// supports_delta(): the reply says so; the first publication written
  /// (live or replayed) is full, each next one a delta against the one
  /// before where the publication has one and the client holds that one;
  /// after a gap or a new epoch, full again.
  /// `filter` (may be null: none): only the publications it matches are
  /// written (see the class comment). With `delta`, a publication after one
  /// the filter refused goes in full (the client's base is older).
  void expect(const std::string& channel, std::uint64_t request, nlohmann::json id,
              std::optional<stream_position> since, bool reject_unrecovered = false,
              time_point due = {}, bool delta = false, tags_filter_ptr filter = nullptr);

  /// WebSocket: the client left `channel`. A subscribe still pending is
  /// answered with an `error` `cancelled` first. With `unsub_id` set the
  /// `unsubscribed` reply follows (its id); without it nothing more is written.
  void forget(const std::string& channel, std::optional<nlohmann::json> unsub_id);

  /// `channel` is dropped because a refreshed token no longer allows it: a
  /// subscribe still pending is answered `cancelled` first, then the codec's
  /// revoked() notice with `why` (/v1/ws: error `forbidden`; Centrifugo: an
  /// unsubscribe push 2000). Nothing if the table has no entry for it.
  void revoke(const std::string& channel, std::string_view why);

  /// Gives up every subscribe still unanswered at `now` past its due time
  /// (expect()): each is answered with an `error` `unavailable` carrying
  /// `why` (Centrifugo: code 100 with `"temporary":true`, which the SDK
  /// retries) and its entry dropped, so a later answer is stale and the
  /// client may subscribe again. Returns the (channel, request number) of
  /// each, for the connection actor to forget (session_events).
  std::vector<std::pair<std::string, std::uint64_t>> give_up_overdue(time_point now,
                                                                     std::string_view why);

  /// The earliest due time of a pending subscribe, if any.
  std::optional<time_point> next_due() const noexcept;

  /// A channel's answer. Ignored unless it answers the pending request of
  /// its channel (answers to a cancelled or renewed subscribe are stale).
  void on_answer(const subscription_answer& a);

  /// A live publication; written if it is the next of an active subscription.
  void on_publication(const publication_ptr& p);

  /// SSE: the cursor of every answered channel, in request order (empty
  /// before the first answer).
  std::string cursor() const;

  /// Channels with an entry (pending or active).
  std::size_t size() const noexcept { return entries_.size(); }

private:
  struct entry {
    std::string channel;
    std::uint32_t hash = 0;   ///< sse::channel_hash(channel)
    stream_position position; ///< last publication written
    /// SSE: "<hash>-<epoch>-", the part of this entry's cursor that changes
    /// only with the epoch (kept so an id line costs an append and a number).
    std::string cursor_head;
    std::optional<stream_position> since; ///< pending: where to recover from
    nlohmann::json id;                    ///< WS: id of the pending subscribe
    std::uint64_t request = 0;            ///< WS: number of the pending subscribe (0: any)
    time_point due{};                     ///< WS: give the pending subscribe up then ({}: never)
    bool active = false;                  ///< the channel answered
    bool reject_unrecovered = false;      ///< Centrifugo: 112 rather than recovered:false
    bool delta = false;                   ///< delta compression negotiated
    bool delta_base = false;              ///< ...and the client holds the data at `position`
    tags_filter_ptr filter;               ///< null: every publication
    conflation_key key = 0;               ///< overflow policy conflate: its key; 0: close
  };

  entry* find(const std::string& channel) noexcept;
  /// Drops `channel`'s entry, answering its pending subscribe first
  /// (end_pending, with `why`); false when there is none.
  bool drop(const std::string& channel, std::string_view why);
  /// Writes one codec message (nothing if empty); with the cursor's id
  /// line first where the codec carries_cursor().
  void write(std::string body);
  /// WebSocket: answers `e`'s pending subscribe, which ends unanswered by
  /// its channel (Herald: `cancelled`; Centrifugo: error 107), with `why`.
  /// Nothing if `e` has no pending id.
  void end_pending(entry& e, std::string_view why);
  std::string id_line() const;
  /// Sets e.position.epoch and the cached cursor_head.
  void set_epoch(entry& e, const std::string& epoch);
  void take_position(entry& e, const subscription_answer& a);
  void emit_answer(entry& e, const subscription_answer& a);
  /// Writes `p` if new for `e` (and its filter matches: else only the
  /// position moves); `live` false for a replay.
  void deliver(entry& e, const publication& p, bool live);
  /// Writes a gap notice; false when the entry stopped delivering
  /// (Centrifugo: the client resubscribes).
  bool gap(entry& e, std::string_view reason);
  /// The subscribe reply with the replay inside (session_codec::replay_in_reply()).
  void emit_answer_with_replay(entry& e, const subscription_answer& a);

  transport kind_;
  const session_codec* codec_;
  bool cursor_; ///< codec_->carries_cursor()
  output& out_;
  std::vector<entry> entries_;                ///< few per connection: a vector beats a map
  std::size_t ids_written_ = 0;               ///< SSE: events written with an id line
  std::size_t waiting_ = 0;                   ///< SSE: channels of begin() not answered yet
  std::vector<subscription_answer> answered_; ///< SSE: answers held until all arrived
  std::vector<publication_ptr> held_;         ///< SSE: live publications held meanwhile
  conflation_key last_key_ = 0;               ///< the last conflation key given
};

} // namespace herald::net
