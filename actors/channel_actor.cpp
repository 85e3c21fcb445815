#include "actors/channel_actor.hpp"

#include "net/obs/metrics.hpp"

#include <caf/event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

namespace herald::actors {

void channel_state::prune(caf::actor_clock::time_point now) {
  while (!history.empty() && now - history.front()->at >= limits.ttl)
    history.pop_front();
  while (!key_order.empty() && now - key_order.front().first >= limits.idempotency_window) {
    keys.erase(key_order.front().second);
    key_order.pop_front();
  }
}

void channel_state::append(publication_ptr p) {
  history.push_back(std::move(p));
  while (history.size() > limits.size)
    history.pop_front();
}

void channel_state::refresh_fanout() {
  if (!fanout_dirty)
    return;
  fanout_dirty = false;
  std::unordered_map<net::shard*, std::shared_ptr<net::subscriber_list>> by_shard;
  for (const auto& [who, sink] : subscribers) {
    if (!sink)
      continue;
    auto& list = by_shard[&sink->home()];
    if (!list) {
      list = std::make_shared<net::subscriber_list>();
      list->reserve(subscribers.size());
    }
    list->push_back(sink);
  }
  fanout_lists.clear();
  for (auto& [shard, list] : by_shard)
    fanout_lists.emplace_back(shard, std::move(list));
}

bool channel_state::holds(const publication& p) const {
  if (history.empty() || p.offset < history.front()->offset || p.offset > offset)
    return false;
  const auto i = static_cast<std::size_t>(p.offset - history.front()->offset);
  if (i >= history.size())
    return false;
  const auto& h = history[i];
  return h->offset == p.offset && h->event == p.event && h->data == p.data;
}

recovery channel_state::decide(const std::optional<net::stream_position>& since,
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

namespace {

// Pause before a failed sync is tried again (cluster mode).
constexpr auto sync_retry_delay = std::chrono::milliseconds(250);

void schedule_prune(channel_pointer self) {
  auto& st = self->state;
  if (st.prune_scheduled)
    return;
  // The next moment something expires: the oldest publication, the oldest
  // idempotency key, the linger of a vacated channel.
  std::optional<caf::actor_clock::time_point> next;
  auto consider = [&](caf::actor_clock::time_point t) { next = next ? std::min(*next, t) : t; };
  if (!st.history.empty())
    consider(st.history.front()->at + st.limits.ttl);
  if (!st.key_order.empty())
    consider(st.key_order.front().first + st.limits.idempotency_window);
  auto now = self->clock().now();
  if (!st.gateway && st.subscribers.empty() && st.vacated != caf::actor_clock::time_point{} &&
      st.vacated + st.limits.ttl > now)
    consider(st.vacated + st.limits.ttl);
  if (!next)
    return;
  st.prune_scheduled = true;
  auto due = *next;
  auto wait = due > now ? std::chrono::duration_cast<caf::timespan>(due - now) : caf::timespan{0};
  self->delayed_send(self, wait, prune_atom_v);
}

void check_idle(channel_pointer self) {
  auto& st = self->state;
  if (st.idle(self->clock().now()))
    self->send(st.registry, idle_atom_v, st.name, st.ops_received);
}

// Cluster mode: nobody here listens any more, so stop mirroring Redis.
void stop_watching(channel_pointer self) {
  auto& st = self->state;
  if (!st.gateway || !st.watching || !st.subscribers.empty() || !st.waiting.empty())
    return;
  self->send(st.gateway, unwatch_atom_v, st.name);
  st.watching = st.synced = st.sync_again = false;
  st.history.clear();
  st.held.clear();
}

void remove_subscriber(channel_pointer self, const caf::actor& who) {
  auto& st = self->state;
  auto before = st.waiting.size();
  st.waiting.erase(std::remove_if(st.waiting.begin(), st.waiting.end(),
                                  [&](const subscribe_request& r) { return r.subscriber == who; }),
                   st.waiting.end());
  auto gone = st.subscribers.erase(who) > 0;
  if (gone) {
    // Drop the lists now: they hold the sessions, which hold sockets and
    // connection slots, until the next publication rebuilds them.
    st.fanout_lists.clear();
    st.fanout_dirty = true;
  }
  if (gone || st.waiting.size() != before) {
    self->demonitor(who);
    stop_watching(self);
    st.prune(self->clock().now());
    if (st.subscribers.empty()) {
      st.vacated = self->clock().now();
      schedule_prune(self);
    }
    check_idle(self);
  }
}

// Adds a subscriber and answers it from the local history: the answer goes
// to the session through its shard, ahead of every later fan-out; the
// connection actor learns whom to unsubscribe from.
// @param monitored the subscriber is monitored already (it was waiting).
void answer(channel_pointer self, const subscribe_request& req, bool monitored = false) {
  auto& st = self->state;
  st.prune(self->clock().now());
  auto rec = st.decide(req.since, req.epoch_history);
  auto [it, added] = st.subscribers.try_emplace(req.subscriber, req.sink);
  if (!added)
    it->second = req.sink;
  st.fanout_dirty = true;
  if (added && !monitored)
    self->monitor(req.subscriber);
  if (req.sink) {
    subscribe_result res;
    res.channel = st.name;
    res.request = req.request;
    res.position = {st.epoch, st.offset};
    res.recovered = rec.recovered;
    res.reason = std::move(rec.reason);
    res.replay = std::move(rec.replay);
    req.sink->home().answer(req.sink, std::move(res));
  }
  self->send(req.subscriber, subscribed_atom_v, st.name, req.request,
             caf::actor_cast<caf::actor>(self));
}

// Takes the next publication of the channel: history, then one post per
// shard that has subscribers.
void apply(channel_pointer self, publication_ptr p) {
  auto& st = self->state;
  st.offset = p->offset;
  st.append(p);
  st.refresh_fanout();
  for (const auto& [shard, list] : st.fanout_lists)
    shard->fanout(p, list);
  schedule_prune(self);
}

// Cluster mode: asks the gateway for the channel's state in Redis.
void request_sync(channel_pointer self) {
  auto& st = self->state;
  if (st.syncing) {
    st.sync_again = true;
    return;
  }
  st.syncing = true;
  st.sync_after = st.synced ? st.offset : 0;
  // Our position goes along: Redis moves the channel to a new epoch if its
  // head went back behind what we delivered (net/redis/sync.lua).
  if (!st.stale_epoch.empty())
    self->send(st.gateway, sync_atom_v, st.name, st.sync_after, st.stale_epoch, st.stale_delivered,
               caf::actor_cast<caf::actor>(self));
  else
    self->send(st.gateway, sync_atom_v, st.name, st.sync_after, st.epoch, st.offset,
               caf::actor_cast<caf::actor>(self));
}

// Remembers the epoch the channel is leaving and how far it delivered in it.
void retire_epoch(channel_state& st) {
  if (st.epoch.empty())
    return;
  auto it = std::find_if(st.retired.begin(), st.retired.end(),
                         [&](const auto& r) { return r.first == st.epoch; });
  if (it != st.retired.end())
    st.retired.erase(it);
  st.retired.emplace_back(st.epoch, st.offset);
  if (st.retired.size() > channel_state::max_retired_epochs)
    st.retired.erase(st.retired.begin());
}

void on_synced(channel_pointer self, sync_result& res) {
  auto& st = self->state;
  st.syncing = false;
  if (!st.watching)
    return; // nobody listens any more
  if (!res.ok) {
    // Redis (or just the command connections) went away meanwhile. Try
    // again shortly: the subscriber may already be back, and then no new
    // watch confirmation would come to trigger it.
    spdlog::debug("channel {}: sync failed: {}; retrying", st.name, res.error);
    self->delayed_send(self, sync_retry_delay, watching_atom_v);
    return;
  }
  st.stale_epoch.clear();
  if (res.epoch != st.epoch) {
    auto old = std::find_if(st.retired.begin(), st.retired.end(),
                            [&](const auto& r) { return r.first == res.epoch; });
    if (old != st.retired.end()) {
      // An epoch we left is back (Redis restored from an older snapshot):
      // its offsets up to what we delivered were issued for other
      // publications. Have the sync script move the channel to a new epoch;
      // "delivered" above its head makes the script's rule apply.
      spdlog::warn("channel {}: Redis brought back epoch {} (head {}, {} delivered before); "
                   "moving to a new epoch",
                   st.name, res.epoch, res.head, old->second);
      st.stale_epoch = res.epoch;
      st.stale_delivered = std::max(old->second, res.head + 1);
      st.synced = false;
      request_sync(self);
      return;
    }
    if (st.sync_after > 0) {
      // We asked for what follows our offset in an epoch that is gone: read
      // the new epoch from its start.
      st.synced = false;
      request_sync(self);
      return;
    }
    retire_epoch(st);
    st.epoch = res.epoch;
    st.offset = 0;
    st.history.clear();
  }
  for (auto& p : res.entries)
    if (p->epoch == st.epoch && p->offset > st.offset)
      apply(self, std::move(p));
  for (auto& [off, p] : st.held)
    if (p->epoch == st.epoch && off > st.offset)
      apply(self, p);
  st.held.clear();
  if (res.head > st.offset)
    st.offset = res.head; // entries trimmed away: subscribers see the jump as a gap
  st.synced = true;
  auto waiting = std::move(st.waiting);
  st.waiting.clear();
  for (const auto& req : waiting)
    answer(self, req, true);
  if (st.sync_again) {
    st.sync_again = false;
    request_sync(self);
  }
}

void on_remote(channel_pointer self, const publication_ptr& p) {
  auto& st = self->state;
  if (!st.watching)
    return;
  if (!st.synced || st.syncing) {
    st.held.emplace(p->offset, p);
    return;
  }
  if (p->epoch != st.epoch) {
    // The channel's history was lost in Redis and a new epoch began.
    st.held.emplace(p->offset, p);
    st.synced = false;
    request_sync(self);
    return;
  }
  if (p->offset <= st.offset) {
    // Already have it, normally (the sync read it from the stream). If what
    // we hold at that offset is another publication, or we cannot tell, the
    // channel's history in Redis may have gone backwards and offsets are
    // being issued again: a sync compares Redis's head with what we
    // delivered and moves the channel to a new epoch if so.
    if (!st.holds(*p))
      request_sync(self);
    return;
  }
  if (p->offset > st.offset + 1) {
    // Publications went missing on the way (Redis away, pub/sub dropped):
    // fill the gap from the stream before going on.
    st.held.emplace(p->offset, p);
    request_sync(self);
    return;
  }
  apply(self, p);
}

} // namespace

caf::behavior channel_actor(channel_pointer self, std::string name, std::string epoch,
                            history_options limits, caf::actor registry, caf::actor gateway) {
  auto& st = self->state;
  st.name = std::move(name);
  st.epoch = std::move(epoch);
  st.limits = limits;
  if (st.limits.size == 0)
    st.limits.size = 1;
  st.registry = std::move(registry);
  st.gateway = std::move(gateway);
  if (st.gateway)
    st.epoch.clear(); // Redis holds the epoch
  self->set_down_handler(
    [self](caf::down_msg& dm) { remove_subscriber(self, caf::actor_cast<caf::actor>(dm.source)); });
  return {
    [self](subscribe_atom, const subscribe_request& req) {
      auto& st = self->state;
      ++st.ops_received;
      if (!st.gateway || (st.synced && !st.syncing)) {
        answer(self, req);
        return;
      }
      // Cluster mode, mirror not ready: answer once it is.
      st.waiting.push_back(req);
      self->monitor(req.subscriber);
      if (!st.watching) {
        st.watching = true;
        self->send(st.gateway, watch_atom_v, st.name, caf::actor_cast<caf::actor>(self));
      }
    },
    [self](watching_atom) {
      if (self->state.watching)
        request_sync(self);
    },
    [self](synced_atom, sync_result& res) { on_synced(self, res); },
    [self](remote_atom, const publication_ptr& p) { on_remote(self, p); },
    [self](unsub_atom, const caf::actor& who) { remove_subscriber(self, who); },
    [self](publish_atom, const publish_ticket_ptr& ticket, std::size_t index) {
      auto& st = self->state;
      ++st.ops_received;
      auto now = self->clock().now();
      st.prune(now);
      const auto& key = ticket->request.idempotency_key;
      if (!key.empty()) {
        if (auto it = st.keys.find(key); it != st.keys.end()) {
          // A retry within the window: the first publication's offset, nothing delivered.
          net::metrics::idempotent_replay();
          ticket->complete(index, it->second, st.epoch);
          return;
        }
      }
      apply(self, make_publication(st.name, st.epoch, st.offset + 1, ticket->request.event,
                                   ticket->request.data, now, ticket->accepted_ns));
      if (!key.empty()) {
        st.keys.emplace(key, st.offset);
        st.key_order.emplace_back(now, key);
        schedule_prune(self);
      }
      ticket->complete(index, st.offset, st.epoch);
    },
    [self](history_atom, const channel_query_ptr& q) {
      auto& st = self->state;
      ++st.ops_received;
      if (st.gateway && (!st.synced || st.syncing)) {
        // Cluster mode: only a channel with local subscribers mirrors Redis;
        // the gateway reads the others' position from Redis itself.
        self->send(st.gateway, history_atom_v, q);
        check_idle(self);
        return;
      }
      auto now = self->clock().now();
      st.prune(now);
      auto n = std::min(q->limit, st.history.size());
      std::vector<publication_ptr> latest(st.history.end() - static_cast<std::ptrdiff_t>(n),
                                          st.history.end());
      if (!st.gateway && st.subscribers.empty()) {
        // The position an app loads must stay valid while it subscribes: the
        // epoch lingers --history-ttl, as after a last subscriber left.
        st.vacated = now;
        schedule_prune(self);
      }
      q->done(true, {st.epoch, st.offset}, std::move(latest));
    },
    [self](prune_atom) {
      auto& st = self->state;
      st.prune_scheduled = false;
      st.prune(self->clock().now());
      schedule_prune(self);
      check_idle(self);
    },
    [self](stop_atom) { self->quit(); },
  };
}

} // namespace herald::actors
