#include "actors/connection_auth.hpp"

#include "net/wire/errors.hpp"
#include "net/wire/ws/session_codec.hpp"
#include "net/wire/ws/protocol.hpp"

#include <caf/event_based_actor.hpp>

#include <algorithm>
#include <chrono>

namespace herald::actors {

namespace ws = net::ws;

namespace {

bool checking(const connection_state& st) {
  return st.options.auth && !st.options.auth->auth_off();
}

void send_text(connection_state& st, std::string text) {
  st.sink->send(std::move(text));
}

// Arms the expiry timers of the current token. Timers of an older token
// carry an older generation and are ignored when they fire.
// Timers are armed for at most this long; a later expiry re-arms them when
// they fire (the actor clock adds delays to a nanosecond steady_clock, which
// overflows about 292 years out).
constexpr std::chrono::milliseconds max_timer{std::chrono::hours{24}};

// Time left until the token stops being valid (exp + leeway); <= 0: expired.
std::chrono::milliseconds time_left(const connection_state& st) {
  const auto& pol = *st.options.auth;
  // In ms, not the clock's ns: an exp centuries away does not fit in ns.
  using std::chrono::milliseconds;
  auto deadline = std::chrono::duration_cast<milliseconds>(std::chrono::seconds(st.who.exp) +
                                                           pol.verifier->config().leeway);
  return deadline - st.options.wall_clock();
}

std::chrono::milliseconds refresh_grace(const connection_state& st) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(st.options.auth->refresh_grace);
}

void schedule_expiry(connection_pointer self) {
  auto& st = self->state;
  auto gen = ++st.auth_generation;
  if (!checking(st) || st.who.exp == 0)
    return;
  auto until = std::clamp(time_left(st), std::chrono::milliseconds{0}, max_timer);
  if (st.options.kind == transport::ws) {
    auto ask =
      std::clamp(time_left(st) - refresh_grace(st), std::chrono::milliseconds{0}, max_timer);
    self->delayed_send(self, ask, expiring_atom_v, gen);
  }
  self->delayed_send(self, until, expire_atom_v, gen);
}

} // namespace

std::chrono::milliseconds system_wall_clock() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
    std::chrono::system_clock::now().time_since_epoch());
}

std::int64_t unix_now(const connection_state& st) {
  return std::chrono::duration_cast<std::chrono::seconds>(st.options.wall_clock()).count();
}

void auth_start(connection_pointer self) {
  auto& st = self->state;
  st.who = st.options.who;
  if (!checking(st))
    return;
  if (st.options.kind == transport::ws && !st.who.authenticated &&
      !st.options.auth->anonymous_streams)
    self->delayed_send(self, st.options.auth->ws_auth_timeout, auth_wait_atom_v);
  if (st.who.authenticated)
    schedule_expiry(self);
}

bool auth_checking(const connection_state& st) {
  return checking(st);
}

std::uint32_t auth_refresh_ttl(const connection_state& st) {
  if (!checking(st) || st.who.exp == 0)
    return 0;
  auto left = std::chrono::duration_cast<std::chrono::seconds>(time_left(st) - refresh_grace(st));
  return static_cast<std::uint32_t>(
    std::clamp<std::int64_t>(left.count(), 1, std::int64_t{365} * 24 * 3600));
}

void auth_adopt(connection_pointer self, net::auth::principal next) {
  auto& st = self->state;
  st.who = std::move(next);
  // A refreshed token may allow less (its `channels` claim): drop the rest.
  for (auto it = st.subs.begin(); it != st.subs.end();) {
    if (!st.options.auth || net::auth::may_read(*st.options.auth, st.who, it->first)) {
      ++it;
      continue;
    }
    if (it->second.channel)
      self->send(it->second.channel, unsub_atom_v, caf::actor_cast<caf::actor>(self));
    st.sink->revoke(it->first, "the new token does not allow this channel: unsubscribed");
    it = st.subs.erase(it);
  }
  schedule_expiry(self);
}

void auth_command(connection_pointer self, const ws::command& cmd) {
  auto& st = self->state;
  if (st.closing)
    return;
  if (!checking(st)) {
    // Authentication is off (--insecure without a JWT key): nothing to check.
    send_text(st, ws::encode_authenticated(cmd.id, cmd.kind == ws::op::refresh, false, {}, 0));
    return;
  }
  net::auth::principal next;
  auto err = net::auth::authenticate(*st.options.auth, cmd.token, unix_now(st), next);
  if (cmd.kind == ws::op::connect) {
    if (st.who.authenticated) {
      st.sink->send(ws::encode_error(cmd.id, errc::invalid_request,
                                                        "already authenticated; send refresh"));
      return;
    }
    if (err != net::auth::token_error::none) {
      close_client(self, {net::close_reason::auth,
                        info(errc::unauthorized).close_code,
                        std::string{net::auth::to_string(err)}});
      return;
    }
  } else {
    if (!st.who.authenticated) {
      st.sink->send(ws::encode_error(cmd.id, errc::unauthorized, "send connect first"));
      return;
    }
    if (err != net::auth::token_error::none) {
      st.sink->send(ws::encode_error(cmd.id, errc::unauthorized,
                                                            net::auth::to_string(err)));
      return;
    }
    if (next.sub != st.who.sub) {
      st.sink->send(ws::encode_error(cmd.id, errc::forbidden,
                                                            "the refresh token has another sub"));
      return;
    }
  }
  auth_adopt(self, std::move(next));
  send_text(st, ws::encode_authenticated(cmd.id, cmd.kind == ws::op::refresh, true, st.who.sub,
                                         st.who.exp));
}

bool auth_may_subscribe(connection_pointer self, const ws::command& cmd) {
  auto& st = self->state;
  if (!st.options.auth || net::auth::may_read(*st.options.auth, st.who, cmd.channel))
    return true;
  if (!st.who.authenticated)
    st.sink->send(ws::encode_error(
            cmd.id, errc::unauthorized,
            "a token is required: send {\"op\":\"connect\",\"token\":...}", cmd.channel));
  else
    st.sink->send(ws::encode_error(cmd.id, errc::forbidden,
                                           "the token does not allow this channel", cmd.channel));
  return false;
}

void auth_on_wait_over(connection_pointer self) {
  auto& st = self->state;
  if (st.who.authenticated || st.closing)
    return;
  close_client(self, {net::close_reason::auth,
                    info(errc::unauthorized).close_code,
                    "authentication timeout: send connect with a token first"});
}

void auth_on_expiring(connection_pointer self, std::uint64_t generation) {
  auto& st = self->state;
  if (generation != st.auth_generation || st.closing)
    return;
  if (time_left(st) - refresh_grace(st) > std::chrono::milliseconds{0})
    return; // a capped timer: the expire timer re-arms both
  // Empty where the client refreshes on its own (Centrifugo: after the
  // connect reply's `ttl`).
  if (auto notice = ws::session_codec_for(st.options.dialect).refresh_required(st.who.exp);
      !notice.empty())
    send_text(st, std::move(notice));
}

void auth_on_expired(connection_pointer self, std::uint64_t generation) {
  auto& st = self->state;
  if (generation != st.auth_generation || st.closing)
    return;
  if (time_left(st) > std::chrono::milliseconds{0}) {
    schedule_expiry(self); // a capped timer fired early: arm the next stretch
    return;
  }
  // 4002; the session's codec says it (SSE: a last herald.token_expired event).
  close_client(self,
             {net::close_reason::auth, info(errc::token_expired).close_code, "token expired"});
}

} // namespace herald::actors
