#include "actors/connection_actor.hpp"

#include "actors/connection_auth.hpp"

#include "net/errors.hpp"
#include "net/metrics.hpp"
#include "net/sse/encoder.hpp"
#include "net/ws/protocol.hpp"

#include <caf/event_based_actor.hpp>

namespace herald::actors {

namespace ws = net::ws;

std::string connection_state::sse_cursor() const {
  std::string out;
  out.reserve(order.size() * 32);
  for (const auto& name : order) {
    auto it = subs.find(name);
    if (it == subs.end() || !it->second.active)
      continue;
    if (!out.empty())
      out.push_back('_');
    net::sse::append_entry(out, {it->second.hash, it->second.position});
  }
  return out;
}

std::string connection_state::sse_id_line() const {
  std::string out;
  out.reserve(6 + order.size() * 48);
  out += "id: ";
  const auto start = out.size();
  for (const auto& name : order) {
    auto it = subs.find(name);
    if (it == subs.end() || !it->second.active)
      continue;
    if (out.size() != start)
      out.push_back('_');
    net::sse::append_entry(out, {it->second.hash, it->second.position});
  }
  out.push_back('\n');
  return out;
}

namespace {

void send_gap(connection_state& st, const std::string& channel, std::string_view reason) {
  if (st.options.kind == transport::sse) {
    st.sink->deliver(st.sse_id_line(),
                     net::make_frame(net::sse::encode_gap(channel, reason)));
  } else {
    nlohmann::json j{{"op", "gap"}, {"channel", channel}, {"reason", reason}};
    st.sink->deliver({}, net::make_frame(j.dump()));
  }
}

void send_ws(connection_state& st, std::string text) {
  st.sink->deliver({}, net::make_frame(std::move(text)));
}

} // namespace

bool connection_state::deliver(const publication& p, const publication_ptr&, bool live) {
  auto it = subs.find(p.channel);
  if (it == subs.end() || !it->second.active)
    return false;
  auto& s = it->second;
  if (p.epoch != s.position.epoch) {
    // The channel's history was lost and restarted (cluster mode: the
    // channel expired in Redis): offsets count anew. Say so, then go on.
    s.position = {p.epoch, p.offset - 1};
    send_gap(*this, p.channel, "epoch_changed");
  }
  if (p.offset <= s.position.offset)
    return false; // already delivered (the recovery seam)
  if (p.offset > s.position.offset + 1) {
    // Never expected inside one channel actor's lifetime; never silent.
    s.position.offset = p.offset - 1;
    send_gap(*this, p.channel, "missed_publications");
  }
  s.position.offset = p.offset;
  auto accepted = live ? p.accepted_ns : 0;
  if (options.kind == transport::sse) {
    net::metrics::delivered(net::metrics::transport::sse);
    sink->deliver(sse_id_line(), p.sse, accepted);
  } else {
    net::metrics::delivered(net::metrics::transport::ws);
    sink->deliver({}, p.ws, accepted);
  }
  return true;
}

namespace {

void subscribe(connection_pointer self, const std::string& channel) {
  auto& st = self->state;
  auto& s = st.subs[channel];
  s.request = st.next_request++;
  self->send(st.registry, subscribe_atom_v,
             subscribe_request{channel, caf::actor_cast<caf::actor>(self), s.since, s.request});
}

// Sets the position a subscription starts from: where the client was when
// the channel will replay, the channel's head otherwise.
void take_position(subscription& s, const subscribe_result& res) {
  s.channel = res.channel_actor;
  s.active = true;
  s.position.epoch = res.position.epoch;
  s.position.offset = (s.since && res.recovered) ? s.since->offset : res.position.offset;
}

// Emits what a subscribe answer means for the client, after take_position.
void emit_answer(connection_pointer self, subscription& s, const subscribe_result& res) {
  auto& st = self->state;
  if (st.options.kind == transport::ws) {
    send_ws(st, ws::encode_subscribed(s.request_id, res.channel, res.position,
                                      s.since.has_value() && res.recovered, res.reason));
    s.request_id = nullptr;
  } else if (s.since && !res.recovered) {
    send_gap(st, res.channel, res.reason);
  }
  if (s.since)
    net::metrics::recovery(res.recovered);
  for (const auto& p : res.replay)
    st.deliver(*p, p, false);
  s.since.reset();
}

void on_subscribed(connection_pointer self, subscribe_result& res) {
  auto& st = self->state;
  auto it = st.subs.find(res.channel);
  if (it == st.subs.end()) {
    // Unsubscribed while the subscribe was on its way: leave the channel.
    self->send(res.channel_actor, unsub_atom_v, caf::actor_cast<caf::actor>(self));
    return;
  }
  if (it->second.active || it->second.request != res.request)
    return; // the answer to a subscribe the client cancelled (and renewed): ours follows
  if (st.options.kind == transport::sse && st.pending_initial > 0) {
    st.answered.push_back(std::move(res));
    if (--st.pending_initial > 0)
      return;
    // All initial answers are in: positions first, so that every id line
    // written below names every channel of the connection.
    for (auto& r : st.answered)
      take_position(st.subs[r.channel], r);
    for (auto& r : st.answered)
      emit_answer(self, st.subs[r.channel], r);
    st.answered.clear();
    auto held = std::move(st.held);
    for (const auto& p : held)
      st.deliver(*p, p);
    return;
  }
  take_position(it->second, res);
  emit_answer(self, it->second, res);
}

void close_client(connection_pointer self, net::close_request req) {
  auto& st = self->state;
  if (st.closing)
    return;
  st.closing = true;
  st.sink->close(std::move(req));
}

void on_text(connection_pointer self, const std::string& text) {
  auto& st = self->state;
  if (st.closing)
    return;
  ws::command cmd;
  ws::command_error err;
  bool parsed = ws::parse_command(text, cmd, err);
  // --max-subscribe-attempts: refused subscribes count too, so that a client
  // cannot probe channel names forever on one connection.
  if ((parsed ? cmd.kind == ws::op::subscribe : err.subscribe)
      && st.options.max_subscribe_attempts > 0
      && ++st.subscribe_attempts > st.options.max_subscribe_attempts) {
    auto limit = "more than " + std::to_string(st.options.max_subscribe_attempts)
                 + " subscribe attempts on one connection";
    send_ws(st, ws::encode_error(parsed ? cmd.id : err.id, errc::too_many_subscribes, limit,
                                 parsed ? cmd.channel : err.channel));
    close_client(self, {net::close_reason::policy, info(errc::too_many_subscribes).close_code,
                        "too many subscribe attempts", {}});
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
                                     "at most " + std::to_string(st.options.max_channels)
                                       + " channels per connection",
                                     cmd.channel));
        return;
      }
      auto& s = st.subs[cmd.channel];
      s.request_id = cmd.id;
      s.since = cmd.since;
      s.hash = net::sse::channel_hash(cmd.channel);
      subscribe(self, cmd.channel);
      return;
    }
    case ws::op::unsubscribe: {
      auto it = st.subs.find(cmd.channel);
      if (it == st.subs.end()) {
        send_ws(st, ws::encode_error(cmd.id, errc::not_subscribed, {}, cmd.channel));
        return;
      }
      if (it->second.active) {
        self->send(it->second.channel, unsub_atom_v, caf::actor_cast<caf::actor>(self));
      } else {
        // The subscribe is still on its way: it ends here, and says so.
        send_ws(st, ws::encode_error(it->second.request_id, errc::cancelled,
                                     "unsubscribed before the subscription completed",
                                     cmd.channel));
      }
      st.subs.erase(it);
      send_ws(st, ws::encode_unsubscribed(cmd.id, cmd.channel));
      return;
    }
  }
}

} // namespace

caf::behavior connection_actor(connection_pointer self, std::shared_ptr<net::frame_sink> sink,
                               caf::actor registry, connection_options options,
                               std::vector<std::string> initial,
                               std::vector<net::sse::cursor_entry> cursor) {
  auto& st = self->state;
  st.sink = std::move(sink);
  st.registry = std::move(registry);
  st.options = options;
  // Whatever ends this actor also ends its connection.
  self->attach_functor([weak = std::weak_ptr<net::frame_sink>(st.sink)](const caf::error&) {
    if (auto s = weak.lock())
      s->close({net::close_reason::shutdown, 1001, "going away", {}});
  });
  for (auto& name : initial) {
    auto& s = st.subs[name];
    s.hash = net::sse::channel_hash(name);
    for (const auto& e : cursor)
      if (e.channel_hash == s.hash)
        s.since = e.position;
    st.order.push_back(name);
  }
  st.pending_initial = st.order.size();
  auth_start(self);
  for (const auto& name : st.order)
    subscribe(self, name);
  return {
    [self](const publication_ptr& p) {
      auto& st = self->state;
      if (st.closing)
        return;
      if (st.options.kind == transport::sse && st.pending_initial > 0) {
        st.held.push_back(p);
        return;
      }
      st.deliver(*p, p);
    },
    [self](subscribed_atom, subscribe_result& res) { on_subscribed(self, res); },
    [self](text_atom, const std::string& text) { on_text(self, text); },
    [self](watermark_atom, bool above, std::size_t) {
      if (!above)
        return;
      auto& st = self->state;
      if (st.options.kind == transport::sse)
        close_client(self, {net::close_reason::slow_client, 1013, {},
                            net::make_frame(net::sse::encode_gap({}, "slow_client"))});
      else
        close_client(self, {net::close_reason::slow_client, 1013,
                            "slow client: outbound buffer over its limit", {}});
    },
    [self](closed_atom, std::uint8_t) { self->quit(); },
    [self](auth_wait_atom) { auth_on_wait_over(self); },
    [self](expiring_atom, std::uint64_t gen) { auth_on_expiring(self, gen); },
    [self](expire_atom, std::uint64_t gen) { auth_on_expired(self, gen); },
  };
}

} // namespace herald::actors
