#include "actors/connection_actor.hpp"

#include "actors/centrifugo_commands.hpp"
#include "actors/connection_auth.hpp"

#include "net/wire/centrifugo/codec.hpp"
#include "net/wire/errors.hpp"
#include "net/wire/ws/protocol.hpp"

#include <caf/event_based_actor.hpp>

namespace herald::actors {

namespace ws = net::ws;

namespace {

void send_ws(connection_state& st, std::string text) {
  st.sink->send(std::move(text));
}

void on_subscribed(connection_pointer self, const std::string& channel, std::uint64_t request,
                   const caf::actor& channel_actor) {
  auto& st = self->state;
  auto it = st.subs.find(channel);
  if (it == st.subs.end()) {
    // Unsubscribed while the subscribe was on its way: leave the channel.
    self->send(channel_actor, unsub_atom_v, caf::actor_cast<caf::actor>(self));
    return;
  }
  if (it->second.request != request)
    return; // the answer to a subscribe the client cancelled (and renewed): ours follows
  it->second.channel = channel_actor;
}

void on_text(connection_pointer self, const std::string& text) {
  auto& st = self->state;
  if (st.closing)
    return;
  if (net::centrifugo::codec_for(st.options.dialect) != nullptr) {
    centrifugo_on_text(self, text);
    return;
  }
  ws::command cmd;
  ws::command_error err;
  bool parsed = ws::parse_command(text, cmd, err);
  // --max-subscribe-attempts: refused subscribes count too, so that a client
  // cannot probe channel names forever on one connection.
  if ((parsed ? cmd.kind == ws::op::subscribe : err.subscribe) &&
      st.options.max_subscribe_attempts > 0 &&
      ++st.subscribe_attempts > st.options.max_subscribe_attempts) {
    auto limit = "more than " + std::to_string(st.options.max_subscribe_attempts) +
                 " subscribe attempts on one connection";
    send_ws(st, ws::encode_error(parsed ? cmd.id : err.id, errc::too_many_subscribes, limit,
                                 parsed ? cmd.channel : err.channel));
    close_client(self, {net::close_reason::policy, info(errc::too_many_subscribes).close_code,
                        "too many subscribe attempts"});
    return;
  }
  if (!parsed) {
    send_ws(st, ws::encode_error(err.id, err.code, err.message, err.channel));
    return;
  }
  switch (cmd.kind) {
  case ws::op::ping:
    send_ws(st, ws::encode_pong(cmd.id));
    return;
  case ws::op::connect:
  case ws::op::refresh:
    auth_command(self, cmd);
    return;
  case ws::op::subscribe: {
    if (!auth_may_subscribe(self, cmd))
      return;
    if (st.subs.count(cmd.channel) > 0) {
      send_ws(st, ws::encode_error(cmd.id, errc::already_subscribed, {}, cmd.channel));
      return;
    }
    if (st.subs.size() >= st.options.max_channels) {
      send_ws(st, ws::encode_error(cmd.id, errc::too_many_channels,
                                   "at most " + std::to_string(st.options.max_channels) +
                                     " channels per connection",
                                   cmd.channel));
      return;
    }
    st.sink->expect(cmd.channel, st.next_request, cmd.id, cmd.since, false, cmd.delta,
                    cmd.filter);
    send_subscribe(self, cmd.channel, cmd.since, /*epoch_history=*/false, cmd.delta, cmd.filter);
    return;
  }
  case ws::op::unsubscribe: {
    auto it = st.subs.find(cmd.channel);
    if (it == st.subs.end()) {
      send_ws(st, ws::encode_error(cmd.id, errc::not_subscribed, {}, cmd.channel));
      return;
    }
    if (it->second.channel)
      self->send(it->second.channel, unsub_atom_v, caf::actor_cast<caf::actor>(self));
    // A subscribe still on its way: on_subscribed leaves the channel when
    // it answers, and the session answers the subscribe `cancelled`.
    st.subs.erase(it);
    st.sink->forget(cmd.channel, cmd.id);
    return;
  }
  }
}

} // namespace

// Asks the channel (through the registry) for `channel`. The session learns
// of the subscribe first (WebSocket: expect(); SSE: begin()), through the
// same shard queue the channel's answer takes after it.
void send_subscribe(connection_pointer self, const std::string& channel,
                    std::optional<net::stream_position> since, bool epoch_history, bool delta,
                    net::tags_filter_ptr filter) {
  auto& st = self->state;
  auto& s = st.subs[channel];
  s.request = st.next_request++; // a renewed subscribe: on_subscribed takes the new answer
  self->send(st.registry, subscribe_atom_v,
             subscribe_request{channel, caf::actor_cast<caf::actor>(self), std::move(since),
                               s.request, st.sink, epoch_history, delta, std::move(filter)});
}

void close_client(connection_pointer self, net::close_request req) {
  auto& st = self->state;
  if (st.closing)
    return;
  st.closing = true;
  st.sink->close(std::move(req));
}

caf::behavior connection_actor(connection_pointer self, std::shared_ptr<net::session_control> sink,
                               caf::actor registry, connection_options options,
                               std::vector<std::string> initial,
                               std::vector<net::sse::cursor_entry> cursor) {
  auto& st = self->state;
  st.sink = std::move(sink);
  st.registry = std::move(registry);
  st.options = options;
  // Whatever ends this actor also ends its connection.
  self->attach_functor([weak = std::weak_ptr<net::session_control>(st.sink)](const caf::error&) {
    if (auto s = weak.lock())
      s->close({net::close_reason::shutdown, 1001, "going away"});
  });
  auth_start(self);
  if (!initial.empty()) {
    // SSE: the session holds everything until each channel answered.
    std::vector<std::optional<net::stream_position>> since(initial.size());
    for (std::size_t i = 0; i < initial.size(); ++i) {
      auto hash = net::sse::channel_hash(initial[i]);
      for (const auto& e : cursor)
        if (e.channel_hash == hash)
          since[i] = e.position;
    }
    st.sink->begin(initial, std::move(cursor));
    for (std::size_t i = 0; i < initial.size(); ++i)
      send_subscribe(self, initial[i], since[i], false, false, st.options.sse_filter);
  }
  return {
    [self](subscribed_atom, const std::string& channel, std::uint64_t request,
           const caf::actor& channel_actor) {
      on_subscribed(self, channel, request, channel_actor);
    },
    [self](text_atom, const std::string& text) { on_text(self, text); },
    [self](closed_atom, std::uint8_t) { self->quit(); },
    [self](subscribe_timeout_atom, const std::string& channel, std::uint64_t request) {
      // The session answered the client (`unavailable`: cluster mode, Redis
      // unreachable or slow) and dropped the subscribe: forget it too, so
      // the client may subscribe again. If the channel answered meanwhile,
      // leave it; if it answers later, on_subscribed finds no entry and leaves.
      auto& st = self->state;
      auto it = st.subs.find(channel);
      if (it == st.subs.end() || it->second.request != request)
        return; // unsubscribed or renewed meanwhile
      if (it->second.channel)
        self->send(it->second.channel, unsub_atom_v, caf::actor_cast<caf::actor>(self));
      st.subs.erase(it);
    },
    [self](auth_wait_atom) { auth_on_wait_over(self); },
    [self](expiring_atom, std::uint64_t gen) { auth_on_expiring(self, gen); },
    [self](expire_atom, std::uint64_t gen) { auth_on_expired(self, gen); },
  };
}

} // namespace herald::actors
