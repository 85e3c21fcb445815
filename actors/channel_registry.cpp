#include "actors/channel_registry.hpp"

#include "net/obs/metrics.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/spawn_options.hpp>

#include <spdlog/spdlog.h>

#include <random>

namespace herald::actors {

std::string random_epoch() {
  static constexpr char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string out(12, 'a');
  for (auto& c : out)
    c = alphabet[rng() % 36];
  return out;
}

namespace {

registry_state::entry& channel_for(registry_pointer self, const std::string& name) {
  auto& st = self->state;
  auto it = st.channels.find(name);
  if (it == st.channels.end()) {
    // Monitored, not linked: a link lives in the registry's own list of
    // attachables, and removing one scans that list, which made stopping
    // many idle channels quadratic. A monitor lives at the channel.
    const auto& cls = st.classes->of(name);
    auto limits = st.history;
    limits.size = cls.history_size;
    limits.ttl = cls.history_ttl;
    auto ch = self->spawn(channel_actor, name, st.make_epoch(), limits,
                          caf::actor_cast<caf::actor>(self), st.gateway, cls);
    self->monitor(ch);
    st.names.emplace(ch.address(), name);
    it = st.channels.emplace(name, registry_state::entry{std::move(ch), 0}).first;
    net::metrics::channels(1);
  }
  ++it->second.forwarded;
  return it->second;
}

} // namespace

caf::behavior channel_registry(registry_pointer self, history_options history,
                               std::function<std::string()> make_epoch, caf::actor gateway,
                               std::shared_ptr<const net::channel_classes> classes) {
  self->state.history = history;
  // Without classes every channel is in the default class of `history`.
  self->state.classes =
    classes ? std::move(classes)
            : std::make_shared<const net::channel_classes>(
                history.size, std::chrono::duration_cast<std::chrono::seconds>(history.ttl));
  self->state.gateway = std::move(gateway);
  self->state.make_epoch = make_epoch ? std::move(make_epoch) : random_epoch;
  // A channel that ends is forgotten: the next use spawns a fresh one with a
  // new epoch, so clients see an explicit gap. One that fails is logged.
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    auto n = st.names.find(dm.source);
    if (n == st.names.end())
      return;
    auto it = st.channels.find(n->second);
    if (it != st.channels.end() && it->second.channel.address() == dm.source) {
      spdlog::error("channel {} ended unexpectedly ({}); its history is lost", n->second,
                    caf::to_string(dm.reason));
      st.channels.erase(it);
      net::metrics::channels(-1);
    }
    st.names.erase(n);
  });
  // The server ends the registry with an exit message; the channels go too.
  self->set_exit_handler([self](caf::exit_msg& em) {
    for (auto& [name, e] : self->state.channels)
      self->send_exit(e.channel, em.reason);
    net::metrics::channels(-static_cast<std::int64_t>(self->state.channels.size()));
    self->state.channels.clear();
    self->quit(em.reason);
  });
  return {
    [self](subscribe_atom, const subscribe_request& req) {
      auto& e = channel_for(self, req.channel);
      self->send(e.channel, subscribe_atom_v, req);
    },
    [self](publish_atom, const publish_ticket_ptr& ticket) {
      const auto& names = ticket->request.channels;
      for (std::size_t i = 0; i < names.size(); ++i) {
        auto& e = channel_for(self, names[i]);
        self->send(e.channel, publish_atom_v, ticket, i);
      }
    },
    [self](history_atom, const channel_query_ptr& q) {
      auto& e = channel_for(self, q->channel);
      self->send(e.channel, history_atom_v, q);
    },
    [self](idle_atom, const std::string& name, std::uint64_t ops_received) {
      auto& chans = self->state.channels;
      auto it = chans.find(name);
      if (it == chans.end() || it->second.forwarded != ops_received)
        return; // something is still on its way to the channel
      if (it->second.channel.address() != caf::actor_cast<caf::actor_addr>(self->current_sender()))
        return; // an older actor of the same name
      // Forget it now; its down message then finds no entry to drop.
      self->send(it->second.channel, stop_atom_v);
      chans.erase(it);
      net::metrics::channels(-1);
    },
  };
}

} // namespace herald::actors
