#include "actors/channel_actor.hpp"

#include "net/obs/metrics.hpp"
#include "net/wire/fossil_delta.hpp"

#include <caf/event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

namespace herald::actors {

void channel_state::prune(caf::actor_clock::time_point now) {
  expire(now);
  while (!key_order.empty() && now - key_order.front().first >= limits.idempotency_window) {
    keys.erase(key_order.front().second);
    key_order.pop_front();
  }
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
  if (st.gateway && st.subscribers.empty() && st.waiting.empty() && st.mirror.unwatch(st))
    self->send(st.gateway, unwatch_atom_v, st.name);
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
  auto rec = st.decide(req.since, req.epoch_history, st.cls.recovery, req.filter.get());
  auto [it, added] = st.subscribers.try_emplace(req.subscriber, req.sink);
  if (!added)
    it->second = req.sink;
  if (req.delta && st.cls.delta)
    st.deltas = true;
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
    res.cached = rec.cached;
    res.overflow = st.cls.overflow;
    res.delta_allowed = st.cls.delta;
    req.sink->home().answer(req.sink, std::move(res));
  }
  self->send(req.subscriber, subscribed_atom_v, st.name, req.request,
             caf::actor_cast<caf::actor>(self));
}

// Delta compression: `p` (in the log already) gets a Fossil delta of its data
// against the publication fanned out before it (st.delta_base, kept whatever
// the history size), when that one is the offset just before and the delta
// is smaller than the data. Made here, once, before `p` reaches a shard;
// every subscriber that negotiated deltas shares it.
void attach_delta(const channel_state& st, const publication& p) {
  if (!p.delta.empty() || !st.delta_base)
    return;
  const auto& prev = *st.delta_base;
  if (prev.epoch != p.epoch || prev.offset + 1 != p.offset)
    return;
  auto d = net::fossil::create(prev.data, p.data);
  if (d.size() < p.data.size())
    p.delta = std::move(d);
}

// Hands a publication the log took to every shard that has subscribers,
// one post per shard.
void fan_out(channel_pointer self, const publication_ptr& p) {
  auto& st = self->state;
  if (st.deltas)
    attach_delta(st, *p);
  st.delta_base = p;
  st.refresh_fanout();
  for (const auto& [shard, list] : st.fanout_lists)
    shard->fanout(p, list);
}

// Cluster mode: asks the gateway for the channel's state in Redis.
void send_sync(channel_pointer self, const sync_request& r) {
  self->send(self->state.gateway, sync_atom_v, self->state.name, r.after, r.epoch, r.delivered,
             caf::actor_cast<caf::actor>(self));
}

// Cluster mode: carries out what the mirror answered.
void carry_out(channel_pointer self, cluster_mirror::step step) {
  auto& st = self->state;
  if (!step.restored_epoch.empty())
    spdlog::warn("channel {}: Redis brought back epoch {}, which this instance had left; "
                 "moving to a new epoch",
                 st.name, step.restored_epoch);
  for (const auto& p : step.applied)
    fan_out(self, p);
  if (!step.applied.empty())
    schedule_prune(self);
  if (step.became_ready) {
    auto waiting = std::move(st.waiting);
    st.waiting.clear();
    for (const auto& req : waiting)
      answer(self, req, true);
  }
  if (step.retry_later) {
    spdlog::debug("channel {}: sync failed: {}; retrying", st.name, step.error);
    self->delayed_send(self, sync_retry_delay, watching_atom_v);
  }
  if (step.sync)
    send_sync(self, *step.sync);
}

} // namespace

caf::behavior channel_actor(channel_pointer self, std::string name, std::string epoch,
                            history_options limits, caf::actor registry, caf::actor gateway,
                            const net::channel_class& cls) {
  auto& st = self->state;
  st.cls = cls;
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
      if (!st.gateway || st.mirror.ready()) {
        answer(self, req);
        return;
      }
      // Cluster mode, mirror not ready: answer once it is.
      st.waiting.push_back(req);
      self->monitor(req.subscriber);
      if (st.mirror.watch())
        self->send(st.gateway, watch_atom_v, st.name, caf::actor_cast<caf::actor>(self));
    },
    [self](watching_atom) {
      if (auto r = self->state.mirror.on_watching(self->state))
        send_sync(self, *r);
    },
    [self](synced_atom, sync_result& res) {
      carry_out(self, self->state.mirror.on_synced(res, self->state));
    },
    [self](remote_atom, const publication_ptr& p) {
      carry_out(self, self->state.mirror.on_remote(p, self->state));
    },
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
      if (const auto v = ticket->request.version; v != 0) {
        if (st.version != 0 && st.version_epoch == ticket->request.version_epoch &&
            v <= st.version) {
          // Stale: an older state must not replace a newer one (docs/protocol.md
          // "Versioned publishing"). Nothing stored or delivered.
          net::metrics::version_suppressed();
          ticket->suppress(index, st.offset, st.epoch, "stale_version");
          return;
        }
        st.version = v;
        st.version_epoch = ticket->request.version_epoch;
      }
      auto p = make_publication(st.name, st.epoch, st.offset + 1, ticket->request.event,
                                ticket->request.data, now, ticket->accepted_ns,
                                ticket->request.tags);
      st.append(p);
      fan_out(self, p);
      schedule_prune(self);
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
      if (st.gateway && !st.mirror.ready()) {
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
