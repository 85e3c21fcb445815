#include "actors/centrifugo_commands.hpp"

#include "actors/connection_auth.hpp"

#include "net/wire/centrifugo/codec.hpp"
#include "net/wire/channel_name.hpp"
#include "net/wire/errors.hpp"

#include <caf/event_based_actor.hpp>

#include <array>
#include <random>

namespace herald::actors {

namespace cf = net::centrifugo;

namespace {

// The connection's Centrifugo encoding (JSON or Protobuf), fixed at the upgrade.
const cf::codec& codec(const connection_state& st) {
  return *cf::codec_for(st.options.dialect);
}

void send(connection_state& st, std::string text) {
  st.sink->send(std::move(text));
}

void reply_error(connection_state& st, std::uint32_t id, cf::error_code code,
                 std::string_view message = {}) {
  send(st, codec(st).encode_error(id, code, message));
}

// Centrifugo's "bad request" disconnect: the SDK does not reconnect.
void close_bad_request(connection_pointer self, std::string reason) {
  close_client(self, {net::close_reason::protocol_error, 3501, "bad request: " + reason});
}

// A client id for the connect reply: 128 random bits in the UUID layout
// (version 4), which is what Centrifugo sends and SDKs show.
std::string new_client_id() {
  thread_local std::mt19937_64 gen{std::random_device{}()};
  std::array<std::uint64_t, 2> bits{gen(), gen()};
  bits[0] = (bits[0] & ~0xf000ULL) | 0x4000ULL;                        // version 4
  bits[1] = (bits[1] & 0x3fffffffffffffffULL) | 0x8000000000000000ULL; // variant
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 32; ++i) {
    if (i == 8 || i == 12 || i == 16 || i == 20)
      out.push_back('-');
    auto word = bits[i / 16];
    out.push_back(hex[(word >> (60 - 4 * (i % 16))) & 0xf]);
  }
  return out;
}

std::uint32_t ping_seconds(const connection_state& st) {
  auto s = std::chrono::duration_cast<std::chrono::seconds>(st.options.ping_interval).count();
  return static_cast<std::uint32_t>(std::max<std::int64_t>(s, 1));
}

// Verifies a connect or refresh token. On a refusal it answers the client
// (109 for an expired token, else the 3500 close) and returns false.
bool verify(connection_pointer self, const cf::command& cmd, net::auth::principal& next) {
  auto& st = self->state;
  auto err = net::auth::authenticate(*st.options.auth, cmd.token, unix_now(st), next);
  if (err == net::auth::token_error::none)
    return true;
  if (err == net::auth::token_error::expired) {
    // The SDK calls getToken and connects (or refreshes) again.
    reply_error(st, cmd.id, cf::error_code::token_expired);
    return false;
  }
  close_client(self, {net::close_reason::auth,
                      info(errc::unauthorized).close_code,
                      std::string{net::auth::to_string(err)}});
  return false;
}

void on_connect(connection_pointer self, const cf::command& cmd) {
  auto& st = self->state;
  if (st.connected) {
    reply_error(st, cmd.id, cf::error_code::bad_request, "already connected");
    return;
  }
  if (auth_checking(st)) {
    if (!cmd.token.empty()) {
      net::auth::principal next;
      if (!verify(self, cmd, next))
        return;
      auth_adopt(self, std::move(next));
    } else if (!st.who.authenticated && !st.options.auth->anonymous_streams) {
      close_client(
        self,
        {net::close_reason::auth, info(errc::unauthorized).close_code, "a token is required"});
      return;
    }
    // No token: the upgrade's Authorization header, or an anonymous reader
    // of stream: channels (--anonymous-streams).
  }
  st.connected = true;
  st.client_id = new_client_id();
  send(st, codec(st).encode_connect(cmd.id, st.client_id, st.options.server_version, ping_seconds(st),
                              auth_refresh_ttl(st)));
}

void on_refresh(connection_pointer self, const cf::command& cmd) {
  auto& st = self->state;
  if (!auth_checking(st)) {
    send(st, codec(st).encode_refresh(cmd.id, st.client_id, st.options.server_version, 0));
    return;
  }
  net::auth::principal next;
  if (!verify(self, cmd, next))
    return;
  if (st.who.authenticated && next.sub != st.who.sub) {
    close_client(self, {net::close_reason::auth,
                        info(errc::forbidden).close_code,
                        "the refresh token has another sub"});
    return;
  }
  auth_adopt(self, std::move(next));
  send(st,
       codec(st).encode_refresh(cmd.id, st.client_id, st.options.server_version, auth_refresh_ttl(st)));
}

void on_subscribe(connection_pointer self, const cf::command& cmd) {
  auto& st = self->state;
  if (auto fault = net::check_channel(cmd.channel); fault != net::channel_fault::none) {
    reply_error(st, cmd.id, cf::error_code::unknown_channel,
                "unknown channel: " + net::channel_error_detail(cmd.channel, fault));
    return;
  }
  if (st.options.auth && !net::auth::may_read(*st.options.auth, st.who, cmd.channel)) {
    reply_error(st, cmd.id, cf::error_code::permission_denied);
    return;
  }
  // A subscribe to a channel the connection has is a renewal: the SDK sends
  // one only after it saw the subscription end (an unsubscribe push after a
  // gap, error 112), while the actor may still be listed at the channel.
  // If the subscribe it renews was not answered yet, the session answers
  // that one first (107, subscription_table::expect()): each id gets a reply.
  const bool renewal = st.subs.count(cmd.channel) > 0;
  if (!renewal && st.subs.size() >= st.options.max_channels) {
    reply_error(st, cmd.id, cf::error_code::limit_exceeded,
                "at most " + std::to_string(st.options.max_channels) + " channels per connection");
    return;
  }
  std::optional<net::stream_position> since;
  if (cmd.recover)
    since = cmd.since;
  st.sink->expect(cmd.channel, st.next_request, nlohmann::json(cmd.id), since,
                  (cmd.flag & cf::flag_reject_unrecovered) != 0, cmd.delta, cmd.filter);
  // After a live epoch_changed gap (an unsubscribe push 2500) the SDK comes
  // back here with its old epoch: the reply carries the new epoch's
  // publications, marked not recovered (docs/centrifugo.md "Gaps and recovery").
  // With delta compression the channel makes a delta of each publication.
  send_subscribe(self, cmd.channel, std::move(since), /*epoch_history=*/true, cmd.delta,
                 cmd.filter);
}

void on_unsubscribe(connection_pointer self, const cf::command& cmd) {
  auto& st = self->state;
  auto it = st.subs.find(cmd.channel);
  if (it == st.subs.end()) {
    // Centrifugo answers an unsubscribe from a channel it does not have
    // with success: the client's view is what it asked for.
    send(st, codec(st).encode_unsubscribe(cmd.id));
    return;
  }
  if (it->second.channel)
    self->send(it->second.channel, unsub_atom_v, caf::actor_cast<caf::actor>(self));
  st.subs.erase(it);
  st.sink->forget(cmd.channel, nlohmann::json(cmd.id));
}

} // namespace

void centrifugo_on_text(connection_pointer self, const std::string& text) {
  auto& st = self->state;
  for (auto& line : codec(st).parse_commands(text)) {
    if (st.closing)
      return;
    if (!line.ok) {
      if (line.err.id == 0) {
        close_bad_request(self, line.err.message);
        return;
      }
      reply_error(st, line.err.id, line.err.code, line.err.message);
      continue;
    }
    const auto& cmd = line.cmd;
    if (cmd.kind == cf::method::pong)
      continue;
    if (!st.connected && cmd.kind != cf::method::connect) {
      close_bad_request(self, "connect first");
      return;
    }
    // --max-subscribe-attempts, as on /v1/ws.
    if (cmd.kind == cf::method::subscribe && st.options.max_subscribe_attempts > 0 &&
        ++st.subscribe_attempts > st.options.max_subscribe_attempts) {
      reply_error(st, cmd.id, cf::error_code::limit_exceeded, "too many subscribe attempts");
      close_client(self, {net::close_reason::policy,
                          info(errc::too_many_subscribes).close_code,
                          "too many subscribe attempts"});
      return;
    }
    switch (cmd.kind) {
    case cf::method::pong:
      break;
    case cf::method::ping:
      send(st, codec(st).encode_ping(cmd.id));
      break;
    case cf::method::connect:
      on_connect(self, cmd);
      break;
    case cf::method::refresh:
      on_refresh(self, cmd);
      break;
    case cf::method::subscribe:
      on_subscribe(self, cmd);
      break;
    case cf::method::unsubscribe:
      on_unsubscribe(self, cmd);
      break;
    case cf::method::unsupported:
      reply_error(st, cmd.id, cf::error_code::method_not_found,
                  "Herald does not offer \"" + cmd.unsupported + "\" (docs/centrifugo.md)");
      break;
    }
  }
}

} // namespace herald::actors
