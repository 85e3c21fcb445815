#include "actors/redis_gateway.hpp"

#include "net/wire/errors.hpp"
#include "net/obs/metrics.hpp"
#include "net/redis/envelope.hpp"
#include "net/wire/tags.hpp"

#include <caf/send.hpp>
#include <algorithm>
#include <limits>
#include <spdlog/spdlog.h>

namespace herald::actors {

namespace {

// While Redis refuses writes, a probe write this often.
constexpr auto write_probe_interval = std::chrono::seconds(1);

// Turns a Redis envelope into a publication, or null (logged) when a
// publisher that is not Herald wrote something invalid.
publication_ptr to_publication(const std::string& text, caf::actor_clock::time_point now,
                               std::int64_t accepted_ns = 0) {
  net::redis::envelope env;
  std::string error;
  if (!net::redis::parse_envelope(text, env, error)) {
    spdlog::warn("redis: dropped an invalid publication envelope: {}", error);
    return nullptr;
  }
  return make_publication(std::move(env.channel), std::move(env.epoch), env.offset,
                          std::move(env.event), std::move(env.data), now, accepted_ns,
                          std::move(env.tags));
}

} // namespace

caf::behavior redis_gateway(gateway_pointer self, std::shared_ptr<net::redis::backend> backend,
                            std::shared_ptr<cluster_status> status) {
  auto& st = self->state;
  st.backend = std::move(backend);
  st.status = std::move(status);
  // Backend events arrive on its thread: hand them to the actor.
  auto me = caf::actor_cast<caf::actor>(self);
  // Every envelope is decoded here, on the backend's thread, once: live ones
  // below, a sync's in its callback. The actors get publications.
  st.backend->on_message = [me, &clock = self->home_system().clock()](const std::string& channel,
                                                                      std::string envelope) {
    // Publish-to-write latency starts here, on arrival (before the actor hop).
    auto accepted_ns = net::metrics::now_ns();
    if (auto p = to_publication(envelope, clock.now(), accepted_ns); p && p->channel == channel)
      caf::anon_send(me, remote_atom_v, std::move(p));
  };
  st.backend->on_watching = [me](const std::string& channel) {
    caf::anon_send(me, watching_atom_v, channel);
  };
  st.backend->on_up = [me] { caf::anon_send(me, redis_up_atom_v); };
  st.backend->on_down = [me](const std::string& reason) {
    caf::anon_send(me, redis_down_atom_v, reason);
  };
  // Runs on the backend's thread; the status is thread-safe, and an on_up
  // reported after this call is handled after it (the gateway's mailbox).
  // The backend calls it at the first failed attempt and whenever the reason
  // changes (never once per attempt), so each is logged: an operator sees
  // why an instance that never reached Redis is not ready (wrong port, wrong
  // password, an ACL refusal) in the log, in /readyz and in
  // herald_redis_down_reason.
  st.backend->on_still_down = [status = st.status](const std::string& reason) {
    if (status->ready.ok())
      return;
    status->ready.set(false, "Redis unreachable: " + reason);
    net::metrics::set_redis_problem(net::metrics::classify_redis_problem(reason));
    spdlog::warn("redis: not connected: {} (retrying with backoff)", reason);
  };
  st.backend->on_replicas = [status = st.status](bool ok, const std::string& why) {
    status->replicas.set(ok, ok ? std::string{} : "Redis replicas: " + why);
    if (ok) {
      if (status->ready.ok())
        net::metrics::set_redis_problem(net::metrics::redis_problem::none);
      spdlog::info("redis: replicas in sync (--redis-wait-replicas)");
    } else {
      if (status->ready.ok())
        net::metrics::set_redis_problem(net::metrics::redis_problem::replicas);
      spdlog::warn("redis: not ready for --redis-wait-replicas: {}", why);
    }
  };
  net::metrics::set_redis_up(false); // cluster mode: the Redis figures appear, down until up
  st.backend->start();
  self->attach_functor([b = st.backend](const caf::error&) { b->stop(); });
  return {
    [self](publish_atom, const publish_ticket_ptr& ticket) {
      const auto& req = ticket->request;
      const auto tags = net::tags_json(req.tags);
      for (std::size_t i = 0; i < req.channels.size(); ++i) {
        self->state.backend->publish(
          req.channels[i],
          {req.event, req.data, req.idempotency_key, req.version, req.version_epoch, tags},
          [ticket, i,
           me = caf::actor_cast<caf::actor>(self)](net::redis::backend::publish_result r) {
            if (r.ok || r.refused)
              caf::anon_send(me, writable_atom_v, r.ok, r.error);
            if (r.ok && r.duplicate)
              net::metrics::idempotent_replay();
            if (r.ok && r.stale_version) {
              net::metrics::version_suppressed();
              ticket->suppress(i, r.offset, r.epoch, "stale_version");
              return;
            }
            using outcome = net::redis::backend::outcome;
            using failure = publish_ticket::failure;
            if (r.ok)
              ticket->complete(i, r.offset, r.epoch);
            else
              ticket->fail(i,
                           r.what == outcome::not_replicated ? failure::not_replicated
                           : r.what == outcome::not_stored   ? failure::not_stored
                                                             : failure::unknown,
                           r.error);
          });
      }
    },
    [self](history_atom, const channel_query_ptr& q) {
      // A channel with no local subscriber does not mirror Redis: read its
      // position (starting an epoch when it has none, as a subscribe would)
      // and, when asked, its latest publications straight from Redis.
      // limit 0 reads no entry: the range starts after the highest offset.
      const std::uint64_t after = q->limit == 0 ? std::numeric_limits<std::uint64_t>::max() : 0;
      self->state.backend->sync(q->channel, after, std::string{}, 0,
                                [q, now = self->clock().now()](net::redis::backend::sync_result r) {
                                  if (!r.ok) {
                                    q->done(false, {}, {});
                                    return;
                                  }
                                  const auto n = std::min(q->limit, r.envelopes.size());
                                  std::vector<publication_ptr> latest;
                                  latest.reserve(n);
                                  for (auto it = r.envelopes.end() - static_cast<std::ptrdiff_t>(n);
                                       it != r.envelopes.end(); ++it)
                                    if (auto p = to_publication(*it, now))
                                      latest.push_back(std::move(p));
                                  q->done(true, {std::move(r.epoch), r.head}, std::move(latest));
                                });
    },
    [self](watch_atom, const std::string& channel, const caf::actor& ch) {
      auto& st = self->state;
      st.watchers[channel] = ch;
      if (st.confirmed.count(channel) > 0)
        self->send(ch, watching_atom_v);
      else
        st.backend->watch(channel);
    },
    [self](unwatch_atom, const std::string& channel) {
      auto& st = self->state;
      st.watchers.erase(channel);
      st.confirmed.erase(channel);
      st.backend->unwatch(channel);
    },
    [self](watching_atom, const std::string& channel) {
      auto& st = self->state;
      auto it = st.watchers.find(channel);
      if (it == st.watchers.end())
        return; // unwatched meanwhile
      st.confirmed.insert(channel);
      self->send(it->second, watching_atom_v);
    },
    [self](remote_atom, publication_ptr& p) {
      auto it = self->state.watchers.find(p->channel);
      if (it == self->state.watchers.end())
        return;
      net::metrics::publications_received(net::metrics::source::redis);
      self->send(it->second, remote_atom_v, std::move(p));
    },
    [self](sync_atom, const std::string& channel, std::uint64_t after, const std::string& epoch,
           std::uint64_t delivered, const caf::actor& ch) {
      auto now = self->clock().now();
      self->state.backend->sync(channel, after, epoch, delivered,
                                [ch, now](net::redis::backend::sync_result r) {
                                  sync_result res;
                                  res.ok = r.ok;
                                  res.error = std::move(r.error);
                                  res.epoch = std::move(r.epoch);
                                  res.head = r.head;
                                  for (const auto& text : r.envelopes)
                                    if (auto p = to_publication(text, now))
                                      res.entries.push_back(std::move(p));
                                  caf::anon_send(ch, synced_atom_v, std::move(res));
                                });
    },
    [self](writable_atom, bool ok, const std::string& error) {
      // Readiness tells whether this instance can store a publication: a
      // Redis that is reachable but refuses writes (a read-only replica
      // after a failover, maxmemory, a script error, CROSSSLOT) is not ready
      // until a write succeeds again (a publish, or the probe below).
      auto& st = self->state;
      if (ok == st.status->writable.ok())
        return;
      st.status->writable.set(ok, ok ? std::string{} : "Redis refuses writes: " + error);
      net::metrics::set_redis_writable(ok);
      if (ok) {
        spdlog::info("redis: writes succeed again");
        return;
      }
      spdlog::warn("redis: refuses writes ({}); not ready until a write succeeds", error);
      if (!st.probing) {
        st.probing = true;
        self->delayed_send(self, write_probe_interval, write_probe_atom_v);
      }
    },
    [self](write_probe_atom) {
      auto& st = self->state;
      if (st.status->writable.ok()) {
        st.probing = false;
        return;
      }
      auto me = caf::actor_cast<caf::actor>(self);
      st.backend->probe_write([me](net::redis::backend::publish_result r) {
        if (r.ok || r.refused)
          caf::anon_send(me, writable_atom_v, r.ok, r.error);
      });
      self->delayed_send(self, write_probe_interval, write_probe_atom_v);
    },
    [self](redis_up_atom) {
      self->state.status->ready.set(true, "ok");
      net::metrics::set_redis_up(true);
      net::metrics::set_redis_problem(self->state.status->replicas.ok()
                                        ? net::metrics::redis_problem::none
                                        : net::metrics::redis_problem::replicas);
      spdlog::info("redis: connected; {} channel(s) watched", self->state.watchers.size());
    },
    [self](redis_down_atom, const std::string& reason) {
      auto& st = self->state;
      st.confirmed.clear();
      ++st.status->reconnects;
      st.status->ready.set(false, "Redis unreachable: " + reason);
      net::metrics::set_redis_up(false);
      net::metrics::set_redis_problem(net::metrics::classify_redis_problem(reason));
      net::metrics::redis_reconnect();
      spdlog::warn("redis: down ({}); serving connected clients, reconnecting", reason);
    },
  };
}

} // namespace herald::actors
