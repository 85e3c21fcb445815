// Channel permissions, API key, Origin and the HTTP gates (pure functions).
#include "net/auth/gate.hpp"
#include "net/auth/policy.hpp"
#include "net/wire/strkey.hpp"

#include "tests/net/auth/test_tokens.hpp"

#include <catch2/catch.hpp>

using namespace herald::net::auth;
using herald::errc;

namespace {

// SEP-23 test vectors: valid account ids.
const std::string alice = "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ";
const std::string bob = "GAQAA5L65LSYH7CQ3VTJ7F3HHLGCL3DSLAR2Y47263D56MNNGHSQSTVY";
const std::string secret = "0123456789abcdef0123456789abcdef-test-secret";

policy secured() {
  policy p;
  std::string error;
  jwt_config cfg;
  cfg.key = secret;
  p.verifier = jwt_verifier::create(cfg, error);
  REQUIRE(p.verifier);
  p.api_key_digest = digest_of("publisher-key-0123456789");
  return p;
}

principal user(std::string sub) {
  return principal{true, std::move(sub), 0, std::nullopt};
}

} // namespace

TEST_CASE("user channels: only the sub's own address", "[auth][permissions]") {
  auto p = secured();
  REQUIRE(herald::net::is_account_id(alice));
  REQUIRE(herald::net::is_account_id(bob));
  CHECK(may_read(p, user(alice), "user:" + alice));
  CHECK_FALSE(may_read(p, user(alice), "user:" + bob));
  CHECK(may_read(p, user(alice), "stream:42"));
  // SEP-10 shared account "G...:memo": no user: channel, not even the account's.
  CHECK_FALSE(may_read(p, user(alice + ":1234"), "user:" + alice));
  CHECK(may_read(p, user(alice + ":1234"), "stream:42"));
  // sub that is not a valid StrKey: lowercase, bad checksum, muxed, empty.
  std::string lower = alice;
  for (auto& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string bad = alice;
  bad.back() = bad.back() == 'Z' ? 'A' : 'Z';
  for (const auto& s :
       {lower, bad,
        std::string{"MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGAAAAAAAAAAAAJLK"},
        std::string{}})
    CHECK_FALSE(may_read(p, user(s), "user:" + alice));
}

TEST_CASE("anonymous clients", "[auth][permissions]") {
  auto p = secured();
  auto anon = anonymous(p);
  CHECK_FALSE(anon.authenticated);
  CHECK_FALSE(may_read(p, anon, "stream:42"));
  CHECK_FALSE(may_read(p, anon, "user:" + alice));
  p.anonymous_streams = true;
  CHECK(may_read(p, anon, "stream:42"));
  CHECK_FALSE(may_read(p, anon, "user:" + alice));
}

TEST_CASE("the channels claim narrows", "[auth][permissions]") {
  auto p = secured();
  auto who = user(alice);
  who.channels = std::vector<std::string>{"stream:7", "stream:pay-*"};
  CHECK(may_read(p, who, "stream:7"));
  CHECK_FALSE(may_read(p, who, "stream:70"));
  CHECK(may_read(p, who, "stream:pay-1"));
  CHECK(may_read(p, who, "stream:pay-"));
  CHECK_FALSE(may_read(p, who, "stream:pa"));
  CHECK_FALSE(may_read(p, who, "user:" + alice)); // not listed
  who.channels = std::vector<std::string>{"user:*"};
  CHECK(may_read(p, who, "user:" + alice));
  CHECK_FALSE(may_read(p, who, "user:" + bob)); // the claim never widens
  who.channels = std::vector<std::string>{};
  CHECK_FALSE(may_read(p, who, "stream:7"));
}

TEST_CASE("auth off (--insecure without a JWT key) allows everything", "[auth][permissions]") {
  policy p;
  CHECK(p.auth_off());
  CHECK(may_read(p, anonymous(p), "user:" + alice));
  principal who;
  CHECK(authenticate(p, "anything", 0, who) == token_error::none);
  CHECK(who.authenticated);
}

TEST_CASE("publish API key", "[auth][api-key]") {
  auto p = secured();
  CHECK(api_key_accepted(p, "Bearer publisher-key-0123456789"));
  CHECK(api_key_accepted(p, "bearer publisher-key-0123456789"));
  CHECK_FALSE(api_key_accepted(p, ""));
  CHECK_FALSE(api_key_accepted(p, "Bearer "));
  CHECK_FALSE(api_key_accepted(p, "Bearer publisher-key-012345678"));
  CHECK_FALSE(api_key_accepted(p, "Bearer publisher-key-01234567890"));
  CHECK_FALSE(api_key_accepted(p, "Basic publisher-key-0123456789"));
  CHECK_FALSE(api_key_accepted(p, "publisher-key-0123456789"));
  CHECK(check_publish(p, "").code == errc::unauthorized);
  CHECK(check_publish(p, "Bearer publisher-key-0123456789").code == errc::none);
  // GET /v1/channels/{name} takes the same key but is a read: its message
  // says so (was: "publishing needs ...").
  auto read = check_channel_position(p, "");
  CHECK(read.code == errc::unauthorized);
  CHECK(read.message == "reading a channel's position needs Authorization: Bearer <API key>");
  CHECK(check_channel_position(p, "Bearer wrong").message == "the API key is not accepted");
  CHECK(check_channel_position(p, "Bearer publisher-key-0123456789").code == errc::none);
  policy open;
  CHECK(api_key_accepted(open, ""));
}

TEST_CASE("a key in another route's header: the refusal names the header the route reads",
          "[auth][api-key]") {
  auto p = secured();
  const std::string key = "publisher-key-0123456789";
  // /api (Centrifugo's server API) reads X-API-Key or Authorization: apikey.
  CHECK(check_server_api(p, key, "").code == errc::none);
  CHECK(check_server_api(p, "", "apikey " + key).code == errc::none);
  CHECK(check_server_api(p, "", "ApiKey " + key).code == errc::none);
  const std::string needs = "the server API needs X-API-Key: <key> or Authorization: apikey <key>";
  CHECK(check_server_api(p, "", "").message == needs);
  // The right key as /v1/publish takes it (was: "the API key is not accepted").
  auto bearer = check_server_api(p, "", "Bearer " + key);
  CHECK(bearer.code == errc::unauthorized);
  CHECK(bearer.message == needs + " (Authorization: Bearer is read by /v1/publish)");
  CHECK(check_server_api(p, "", "Basic dXNlcg==").message == needs);
  CHECK(check_server_api(p, "wrong", "").message == "the API key is not accepted");
  CHECK(check_server_api(p, "", "apikey wrong").message == "the API key is not accepted");
  // /v1/publish and /v1/channels read Authorization: Bearer only.
  auto apikey = check_publish(p, "apikey " + key);
  CHECK(apikey.code == errc::unauthorized);
  CHECK(apikey.message == "publishing needs Authorization: Bearer <API key>");
  CHECK(check_publish(p, "Bearer wrong").message == "the API key is not accepted");
  CHECK(check_channel_position(p, "apikey " + key).message ==
        "reading a channel's position needs Authorization: Bearer <API key>");
  policy open;
  CHECK(check_server_api(open, "", "").code == errc::none);
}

TEST_CASE("Origin of WebSocket upgrades and CORS", "[auth][origin]") {
  auto p = secured();
  CHECK(origin_allowed(p, "", "herald.example"));
  CHECK(origin_allowed(p, "https://herald.example", "herald.example"));
  CHECK(origin_allowed(p, "http://127.0.0.1:8080", "127.0.0.1:8080"));
  CHECK_FALSE(origin_allowed(p, "https://evil.example", "herald.example"));
  CHECK_FALSE(origin_allowed(p, "https://herald.example.evil", "herald.example"));
  CHECK_FALSE(origin_allowed(p, "null", "herald.example"));
  p.allowed_origins = {"https://app.example"};
  CHECK(origin_allowed(p, "https://app.example", "herald.example"));
  CHECK(origin_allowed(p, "HTTPS://APP.EXAMPLE", "herald.example"));
  CHECK_FALSE(origin_allowed(p, "https://app.example:444", "herald.example"));
  CHECK(cors_origin(p, "https://app.example") == "https://app.example");
  CHECK(cors_origin(p, "https://evil.example").empty());
  CHECK(cors_origin(p, "").empty());
  p.allowed_origins = {"*"};
  CHECK(origin_allowed(p, "https://evil.example", "herald.example"));
  CHECK(cors_origin(p, "https://evil.example") == "https://evil.example");
}

TEST_CASE("gates: SSE and WebSocket upgrade", "[auth][gate]") {
  auto p = secured();
  const std::int64_t now = 1'800'000'000;
  auto token = herald::test::sign(JWT_ALG_HS256, secret, {{"sub", alice}, {"exp", now + 60}});
  std::vector<std::string> mine{"stream:1", "user:" + alice};
  auto r = check_sse(p, "Bearer " + token, {}, mine, now);
  CHECK(r.code == errc::none);
  CHECK(r.who.sub == alice);
  CHECK(check_sse(p, {}, token, mine, now).code == errc::none); // ?token=
  // One refused channel refuses the whole request.
  std::vector<std::string> both{"stream:1", "user:" + bob};
  r = check_sse(p, "Bearer " + token, {}, both, now);
  CHECK(r.code == errc::forbidden);
  CHECK(r.message.find(bob) != std::string::npos);
  CHECK(r.message.find(token) == std::string::npos);
  CHECK(check_sse(p, {}, {}, mine, now).code == errc::unauthorized);
  CHECK(check_sse(p, "Bearer " + token, {}, mine, now + 3600).code == errc::unauthorized);
  CHECK(check_sse(p, "Basic abc", token, mine, now).code == errc::unauthorized);
  p.anonymous_streams = true;
  CHECK(check_sse(p, {}, {}, {"stream:1"}, now).code == errc::none);
  CHECK(check_sse(p, {}, {}, mine, now).code == errc::unauthorized);

  CHECK(check_ws_upgrade(p, {}, "h", {}, now).code == errc::none);
  CHECK_FALSE(check_ws_upgrade(p, {}, "h", {}, now).who.authenticated);
  CHECK(check_ws_upgrade(p, {}, "h", "Bearer " + token, now).who.sub == alice);
  CHECK(check_ws_upgrade(p, {}, "h", "Bearer x.y.z", now).code == errc::unauthorized);
  CHECK(check_ws_upgrade(p, "https://evil.example", "h", "Bearer " + token, now).code ==
        errc::forbidden);
}
