#include "actors/channel_actor.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/make_message.hpp>

namespace herald::actors {

void channel_state::prune(caf::actor_clock::time_point now) {
  while (!history.empty() && now - history.front()->at >= limits.ttl)
    history.pop_front();
}

void channel_state::append(publication_ptr p) {
  history.push_back(std::move(p));
  while (history.size() > limits.size)
    history.pop_front();
}

recovery channel_state::decide(const std::optional<net::stream_position>& since) const {
  recovery r;
  if (!since)
    return r;
  if (since->epoch != epoch) {
    r.reason = "epoch_changed";
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

void schedule_prune(channel_pointer self) {
  auto& st = self->state;
  if (st.prune_scheduled || st.history.empty())
    return;
  st.prune_scheduled = true;
  auto now = self->clock().now();
  auto due = st.history.front()->at + st.limits.ttl;
  auto wait = due > now ? std::chrono::duration_cast<caf::timespan>(due - now) : caf::timespan{0};
  self->delayed_send(self, wait, prune_atom_v);
}

void check_idle(channel_pointer self) {
  auto& st = self->state;
  if (st.idle())
    self->send(st.registry, idle_atom_v, st.name, st.ops_received);
}

void remove_subscriber(channel_pointer self, const caf::actor& who) {
  if (self->state.subscribers.erase(who) > 0) {
    self->demonitor(who);
    self->state.prune(self->clock().now());
    check_idle(self);
  }
}

} // namespace

caf::behavior channel_actor(channel_pointer self, std::string name, std::string epoch,
                            history_options limits, caf::actor registry) {
  auto& st = self->state;
  st.name = std::move(name);
  st.epoch = std::move(epoch);
  st.limits = limits;
  if (st.limits.size == 0)
    st.limits.size = 1;
  st.registry = std::move(registry);
  self->set_down_handler([self](caf::down_msg& dm) {
    remove_subscriber(self, caf::actor_cast<caf::actor>(dm.source));
  });
  return {
    [self](subscribe_atom, const subscribe_request& req) {
      auto& st = self->state;
      ++st.ops_received;
      st.prune(self->clock().now());
      auto rec = st.decide(req.since);
      if (st.subscribers.insert(req.subscriber).second)
        self->monitor(req.subscriber);
      subscribe_result res;
      res.channel = st.name;
      res.channel_actor = caf::actor_cast<caf::actor>(self);
      res.position = {st.epoch, st.offset};
      res.recovered = rec.recovered;
      res.reason = std::move(rec.reason);
      res.replay = std::move(rec.replay);
      self->send(req.subscriber, subscribed_atom_v, std::move(res));
    },
    [self](unsub_atom, const caf::actor& who) { remove_subscriber(self, who); },
    [self](publish_atom, const publish_ticket_ptr& ticket, std::size_t index) {
      auto& st = self->state;
      ++st.ops_received;
      auto now = self->clock().now();
      st.prune(now);
      auto p = make_publication(st.name, st.epoch, st.offset + 1, ticket->request.event,
                                ticket->request.data, now);
      ++st.offset;
      st.append(p);
      // One message, shared by every subscriber: no per-subscriber copy.
      auto msg = caf::make_message(std::move(p));
      for (const auto& sub : st.subscribers)
        self->send(sub, msg);
      ticket->complete(index, st.offset);
      schedule_prune(self);
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
