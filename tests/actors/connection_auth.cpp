#define CAF_SUITE actors.connection_auth
// Token expiry and refresh at actor level (actors/connection_auth.hpp,
// docs/auth.md "Tokens"): real HS256 tokens signed by libjwt, checked by the
// server's verifier against a wall clock that moves with the test
// scheduler's clock, so the expiry timers and the checks agree. The same
// behaviour against the real process: e2e.auth_ws and e2e.auth.
#include "actors/connection_auth.hpp"
#include "net/auth/jwt_verifier.hpp"
#include "net/auth/policy.hpp"

#include "../net/auth/test_tokens.hpp"

#include "connection_fixture.hpp" // last: caf/test/dsl.hpp defines expect() as a macro

using namespace herald;
using namespace herald::actors;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

struct auth_fixture : test::connection_fixture {
  const std::string secret = std::string(40, 's');
  std::shared_ptr<net::auth::policy> policy = std::make_shared<net::auth::policy>();
  /// The wall clock when the test starts (ms since the Unix epoch).
  const std::chrono::milliseconds t0 = std::chrono::seconds(1'900'000'000);
  const caf::actor_clock::time_point start = sched.clock().now();

  auth_fixture() {
    net::auth::jwt_config cfg;
    cfg.key = secret;
    cfg.leeway = 5s;
    std::string error;
    policy->verifier = net::auth::jwt_verifier::create(cfg, error);
    CAF_REQUIRE(policy->verifier != nullptr);
    policy->refresh_grace = 25s;
    policy->ws_auth_timeout = 5s;
  }

  connection_options options(transport kind) {
    connection_options o;
    o.kind = kind;
    o.max_channels = 64;
    o.auth = policy;
    o.wall_clock = [this] {
      return t0 + std::chrono::duration_cast<std::chrono::milliseconds>(sched.clock().now() - start);
    };
    return o;
  }

  /// A token of `sub` that expires `exp_s` seconds after t0.
  std::string token(std::int64_t exp_s, const std::string& sub = "alice") {
    return test::sign(JWT_ALG_HS256, secret,
                      {{"sub", sub}, {"exp", t0.count() / 1000 + exp_s}, {"channels", {"stream:*"}}});
  }

  /// Moves the test clock (and the wall clock with it) by `d`, running what fires.
  void wait(caf::timespan d) {
    advance_time(d);
    sched.run();
  }

  std::vector<std::string> ops() {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < sink->bodies.size(); ++i)
      out.push_back(body(i).value("op", std::string{}));
    return out;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(connection_auth_tests, auth_fixture)

CAF_TEST(ws refresh_required comes at exp plus leeway minus the grace and the close 4002 at exp plus leeway) {
  auto c = ws_conn(options(transport::ws));
  text(c, json{{"op", "connect"}, {"id", 1}, {"token", token(60)}}.dump());
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 1u);
  CAF_CHECK_EQUAL(body(0)["op"], "connected");
  wait(39s); // exp 60 + leeway 5 - grace 25 = 40
  CAF_CHECK_EQUAL(sink->bodies.size(), 1u);
  wait(1s);
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 2u);
  CAF_CHECK_EQUAL(body(1)["op"], "refresh_required");
  CAF_CHECK_EQUAL(body(1)["expires_at"], t0.count() / 1000 + 60);
  wait(24s);
  CAF_CHECK(!sink->closed);
  wait(1s); // exp + leeway
  CAF_REQUIRE(sink->closed.has_value());
  CAF_CHECK_EQUAL(sink->closed->code, 4002);
  CAF_CHECK(sink->closed->reason == net::close_reason::auth);
}

CAF_TEST(ws a refresh extends the connection and the old token timers are ignored) {
  auto c = ws_conn(options(transport::ws));
  text(c, json{{"op", "connect"}, {"id", 1}, {"token", token(60)}}.dump());
  wait(40s);
  CAF_REQUIRE_EQUAL(ops(), (std::vector<std::string>{"connected", "refresh_required"}));
  // Another sub may not take the connection over.
  text(c, json{{"op", "refresh"}, {"id", 2}, {"token", token(600, "mallory")}}.dump());
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 3u);
  CAF_CHECK_EQUAL(body(2)["code"], "forbidden");
  text(c, json{{"op", "refresh"}, {"id", 3}, {"token", token(120)}}.dump());
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 4u);
  CAF_CHECK_EQUAL(body(3)["op"], "refreshed");
  wait(30s); // past the first token's exp + leeway (65): still open
  CAF_CHECK(!sink->closed);
  CAF_CHECK_EQUAL(sink->bodies.size(), 4u);
  wait(30s); // 100 = 120 + 5 - 25: the new token's notice
  CAF_REQUIRE_EQUAL(sink->bodies.size(), 5u);
  CAF_CHECK_EQUAL(body(4)["op"], "refresh_required");
  wait(25s); // 125
  CAF_REQUIRE(sink->closed.has_value());
  CAF_CHECK_EQUAL(sink->closed->code, 4002);
}

CAF_TEST(ws an expired token is refused at connect and the connection closed 4001) {
  auto c = ws_conn(options(transport::ws));
  text(c, json{{"op", "connect"}, {"id", 1}, {"token", token(-10)}}.dump()); // past the leeway
  CAF_REQUIRE(sink->closed.has_value());
  CAF_CHECK_EQUAL(sink->closed->code, 4001);
  CAF_CHECK_EQUAL(sink->closed->text, "token expired");
}

CAF_TEST(sse the stream ends at exp plus leeway with its codec herald.token_expired event) {
  auto o = options(transport::sse);
  o.who.authenticated = true;
  o.who.sub = "alice";
  o.who.exp = t0.count() / 1000 + 30;
  sink->use(net::metrics::transport::sse);
  auto c = sys.spawn(connection_actor, std::shared_ptr<net::session_control>(sink), reg, o,
                     std::vector<std::string>{"stream:1"}, std::vector<net::sse::cursor_entry>{});
  spawned.push_back(c);
  sched.run();
  wait(34s);
  CAF_CHECK(!sink->closed); // no refresh notice on SSE: it reconnects with a new token
  wait(1s);
  CAF_REQUIRE(sink->closed.has_value());
  CAF_CHECK_EQUAL(sink->closed->code, 4002);
  CAF_CHECK_EQUAL(sink->final_event(),
                  std::string{"event: herald.token_expired\ndata: {\"reason\":\"token_expired\"}\n\n"});
}

CAF_TEST_FIXTURE_SCOPE_END()
