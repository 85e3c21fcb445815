#include "net/core/subscription_table.hpp"

#include "net/wire/errors.hpp"

#include <algorithm>
#include <charconv>

namespace herald::net {

subscription_table::entry* subscription_table::find(const std::string& channel) noexcept {
  for (auto& e : entries_)
    if (e.channel == channel)
      return &e;
  return nullptr;
}

void subscription_table::begin(const std::vector<std::string>& channels,
                               const std::vector<sse::cursor_entry>& cursor,
                               tags_filter_ptr filter) {
  for (const auto& name : channels) {
    entry e;
    e.channel = name;
    e.hash = sse::channel_hash(name);
    e.filter = filter;
    for (const auto& c : cursor)
      if (c.channel_hash == e.hash)
        e.since = c.position;
    entries_.push_back(std::move(e));
  }
  waiting_ = entries_.size();
}

void subscription_table::expect(const std::string& channel, std::uint64_t request,
                                nlohmann::json id, std::optional<stream_position> since,
                                bool reject_unrecovered, time_point due, bool delta,
                                tags_filter_ptr filter) {
  entry* e = find(channel);
  if (e == nullptr) {
    entries_.emplace_back();
    e = &entries_.back();
    e->channel = channel;
    e->hash = sse::channel_hash(channel);
  } else {
    // A subscribe still pending is superseded: its answer will be stale
    // (on_answer), so it is answered here, before the one that replaces it.
    end_pending(*e, "superseded by a later subscribe to the channel");
  }
  e->request = request;
  e->id = std::move(id);
  e->since = std::move(since);
  e->reject_unrecovered = reject_unrecovered;
  e->due = due;
  e->active = false;
  e->position = {};
  e->delta = delta && codec_->supports_delta();
  e->delta_base = false;
  e->filter = std::move(filter);
  e->key = 0; // the answer says the overflow policy
}

std::vector<std::pair<std::string, std::uint64_t>>
subscription_table::give_up_overdue(time_point now, std::string_view why) {
  std::vector<std::pair<std::string, std::uint64_t>> given_up;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->active || it->due == time_point{} || it->due > now) {
      ++it;
      continue;
    }
    if (!it->id.is_null()) // every id gets its one reply; a subscribe without one, none
      write(codec_->pending_error(it->id, it->channel, errc::unavailable, why));
    given_up.emplace_back(std::move(it->channel), it->request);
    it = entries_.erase(it);
  }
  return given_up;
}

std::optional<subscription_table::time_point> subscription_table::next_due() const noexcept {
  std::optional<time_point> next;
  for (const auto& e : entries_)
    if (!e.active && e.due != time_point{} && (!next || e.due < *next))
      next = e.due;
  return next;
}

bool subscription_table::drop(const std::string& channel, std::string_view why) {
  entry* e = find(channel);
  if (e == nullptr)
    return false;
  end_pending(*e, why);
  entries_.erase(entries_.begin() + (e - entries_.data()));
  return true;
}

void subscription_table::forget(const std::string& channel,
                                std::optional<nlohmann::json> unsub_id) {
  drop(channel, "unsubscribed before the subscription completed");
  if (unsub_id)
    write(codec_->unsubscribed(*unsub_id, channel));
}

void subscription_table::revoke(const std::string& channel, std::string_view why) {
  if (drop(channel, why))
    write(codec_->revoked(channel, why));
}

void subscription_table::end_pending(entry& e, std::string_view why) {
  if (e.active || e.id.is_null())
    return; // answered already (or an SSE channel: no ids)
  write(codec_->pending_error(e.id, e.channel, errc::cancelled, why));
  e.id = nullptr;
}

std::string subscription_table::cursor() const {
  auto line = id_line(); // "id: <cursor>\n"
  return line.substr(4, line.size() - 5);
}

void subscription_table::set_epoch(entry& e, const std::string& epoch) {
  e.position.epoch = epoch;
  if (!cursor_)
    return;
  // The cursor entry without its offset: "<hash>-<epoch>-" (net/wire/sse/cursor.hpp).
  e.cursor_head.clear();
  sse::append_entry(e.cursor_head, {e.hash, {epoch, 0}});
  e.cursor_head.pop_back(); // the offset "0"
}

std::string subscription_table::id_line() const {
  std::size_t size = 5;
  for (const auto& e : entries_)
    size += e.cursor_head.size() + 21;
  std::string out;
  out.reserve(size);
  out += "id: ";
  const auto start = out.size();
  for (const auto& e : entries_) {
    if (!e.active)
      continue;
    if (out.size() != start)
      out.push_back('_');
    out += e.cursor_head;
    char num[20];
    auto res = std::to_chars(num, num + sizeof num, e.position.offset);
    out.append(num, res.ptr);
  }
  out.push_back('\n');
  return out;
}

void subscription_table::write(std::string body) {
  if (body.empty())
    return; // nothing in this encoding
  if (!cursor_) {
    out_.write_message({}, std::move(body));
    return;
  }
  ++ids_written_;
  out_.write_message(id_line(), std::move(body));
}

bool subscription_table::gap(entry& e, std::string_view reason) {
  e.delta_base = false; // the next publication goes in full
  write(codec_->gap(e.channel, reason));
  if (codec_->gap_ends_subscription()) {
    // Centrifugo: the SDK subscribes again from its last position (and
    // recovers); until then nothing more is written.
    e.active = false;
    e.request = ~std::uint64_t{0}; // no answer is awaited: only a new subscribe revives it
    e.due = {};
    return false;
  }
  return true;
}

void subscription_table::deliver(entry& e, const publication& p, bool live) {
  if (p.epoch != e.position.epoch) {
    // The channel's history was lost and restarted (cluster mode: the
    // channel expired in Redis): offsets count anew. Say so, then go on.
    set_epoch(e, p.epoch);
    e.position.offset = p.offset - 1;
    if (!gap(e, "epoch_changed"))
      return;
  }
  if (p.offset <= e.position.offset)
    return; // already written (the recovery seam)
  if (p.offset > e.position.offset + 1) {
    // Never expected inside one channel actor's lifetime; never silent.
    e.position.offset = p.offset - 1;
    if (!gap(e, "missed_publications"))
      return;
  }
  if (e.filter && !e.filter->matches(p)) {
    // Not for this subscriber, but seen: the position moves on, so the
    // next offset is no gap and the SSE cursor of the next event names it.
    e.position.offset = p.offset;
    e.delta_base = false; // the client's base is older than the next publication's
    return;
  }
  // A delta only on top of the publication just before, which the client holds.
  const bool as_delta = e.delta && e.delta_base && !p.delta.empty() &&
                        e.position.offset + 1 == p.offset;
  e.position.offset = p.offset;
  metrics::delivered(kind_);
  const auto bytes = e.delta ? codec_->delta_message(p, as_delta) : codec_->publication_message(p);
  e.delta_base = e.delta;
  const auto accepted = live ? p.accepted_ns : 0;
  if (!cursor_) {
    out_.write_publication(p, bytes.header, bytes.body, accepted, e.key);
    return;
  }
  ++ids_written_;
  out_.write_publication(p, id_line(), bytes.body, accepted, e.key);
}

// Sets the position a subscription starts from: where the client was when
// the channel replays, the channel's head otherwise.
void subscription_table::take_position(entry& e, const subscription_answer& a) {
  e.active = true;
  if (a.overflow == overflow_policy::conflate) {
    // A fresh key per subscription: items of a renewed one are not merged
    // with those of the one it replaced. Skips 0 (no key) when it wraps.
    if (++last_key_ == 0)
      ++last_key_;
    e.key = last_key_;
    e.delta = false; // the queue may drop the publication a delta needs
  } else {
    e.key = 0;
  }
  set_epoch(e, a.position.epoch);
  // The channel's class may refuse deltas: the reply says none were negotiated.
  e.delta = e.delta && a.delta_allowed;
  // A replay without recovery (Centrifugo, epoch_changed: the current epoch's
  // history) starts before its first publication, and so does a cache
  // recovery (the latest publication, whatever the client held).
  e.position.offset = (e.since && a.recovered && !a.cached) ? e.since->offset
                      : !a.replay.empty()                   ? a.replay.front()->offset - 1
                                                            : a.position.offset;
}

void subscription_table::emit_answer_with_replay(entry& e, const subscription_answer& a) {
  const bool recovering = e.since.has_value();
  if (recovering)
    metrics::recovery(a.recovered);
  // The replay goes inside the reply, so the SDK takes it before any live
  // publication (which can only follow this message in the queue).
  std::vector<const publication*> replay;
  replay.reserve(a.replay.size());
  for (const auto& p : a.replay) {
    if (p->epoch != e.position.epoch || p->offset <= e.position.offset)
      continue;
    e.position.offset = p->offset; // a publication the filter refuses moves it too
    if (e.filter && !e.filter->matches(*p))
      continue;
    metrics::delivered(kind_);
    replay.push_back(p.get());
  }
  // With delta compression the client's base is the replay's last publication.
  e.delta_base = e.delta && !replay.empty();
  write(codec_->subscribed(e.id, a.channel, a.position, recovering, a.recovered, a.reason, replay,
                           e.delta, a.cached, e.key != 0));
  e.id = nullptr;
  e.since.reset();
}

void subscription_table::emit_answer(entry& e, const subscription_answer& a) {
  if (codec_->replay_in_reply()) {
    emit_answer_with_replay(e, a);
    return;
  }
  // The reply (SSE: none, but a failed recovery's gap), then the replay.
  e.delta_base = false;
  write(codec_->subscribed(e.id, a.channel, a.position, e.since.has_value(), a.recovered, a.reason,
                           {}, e.delta, a.cached, e.key != 0));
  e.id = nullptr;
  if (e.since)
    metrics::recovery(a.recovered);
  for (const auto& p : a.replay)
    deliver(e, *p, false);
  e.since.reset();
}

void subscription_table::on_answer(const subscription_answer& a) {
  entry* e = find(a.channel);
  if (e == nullptr || e->active || (e->request != 0 && e->request != a.request))
    return; // a stale answer: the subscribe was cancelled or renewed
  if (waiting_ == 0) {
    if (e->since && !a.recovered && e->reject_unrecovered) {
      // Flag bit 2: the client loads its state elsewhere (getState) and
      // subscribes again from a position it can recover from.
      metrics::recovery(false);
      write(codec_->unrecoverable(e->id, a.reason));
      entries_.erase(entries_.begin() + (e - entries_.data()));
      return;
    }
    e->due = {};
    take_position(*e, a);
    emit_answer(*e, a);
    return;
  }
  // SSE: hold the answers until every channel of the request answered.
  answered_.push_back(a);
  e->request = ~std::uint64_t{0}; // answered: a second answer is stale
  if (--waiting_ > 0)
    return;
  // Positions first, so that every id line written below names every channel.
  for (const auto& r : answered_)
    take_position(*find(r.channel), r);
  const auto ids_before = ids_written_;
  for (const auto& r : answered_)
    emit_answer(*find(r.channel), r);
  std::vector<std::string_view> conflated;
  for (const auto& e : entries_)
    if (e.key != 0)
      conflated.push_back(e.channel);
  if (ids_written_ == ids_before || !conflated.empty()) {
    // Nothing replayed and no gap: a `herald.cursor` event, so that the
    // client holds a cursor of every channel from the first byte on and a
    // reconnect before the first publication resumes exactly. It has data:
    // WHATWG EventSource would take the id of an id-only event too, but
    // parsers that skip events without data (the `eventsource` npm package)
    // would not. With conflated channels it is written in any case: its
    // data names them (SSE has no subscribe reply to say it).
    write(codec_->cursor_event(conflated));
  }
  answered_.clear();
  answered_.shrink_to_fit();
  auto held = std::move(held_);
  held_.clear();
  for (const auto& p : held)
    on_publication(p);
}

void subscription_table::on_publication(const publication_ptr& p) {
  if (waiting_ > 0) {
    held_.push_back(p);
    return;
  }
  entry* e = find(p->channel);
  if (e == nullptr || !e->active)
    return; // not (yet) subscribed: the channel's answer sets the position
  deliver(*e, *p, true);
}

} // namespace herald::net
