// jwt_verifier: every refusal of RFC 7519 / RFC 8725 with its exact error,
// including the algorithm attacks (alg none, HS256 keyed with the RSA
// public key), with keys generated here and tokens signed by libjwt.
#include "net/auth/jwt_verifier.hpp"

#include "tests/net/auth/test_tokens.hpp"

#include <catch2/catch.hpp>
#include <openssl/hmac.h>

using namespace herald::net::auth;
using herald::test::b64url;
using herald::test::sign;
using nlohmann::json;

namespace {

constexpr std::int64_t now = 1'800'000'000;
const std::string secret = "0123456789abcdef0123456789abcdef-test-secret";

std::shared_ptr<const jwt_verifier> make(jwt_algorithm alg, std::string key, std::string iss = {},
                                         std::string aud = {}) {
  std::string error;
  auto v = jwt_verifier::create(
    {alg, std::move(key), std::chrono::seconds{5}, std::move(iss), std::move(aud)}, error);
  INFO(error);
  REQUIRE(v);
  return v;
}

jwt_config config_of(jwt_algorithm alg, std::string key) {
  jwt_config c;
  c.algorithm = alg;
  c.key = std::move(key);
  return c;
}

json base() {
  return {{"sub", "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ"}, {"exp", now + 60}};
}

token_error check(const jwt_verifier& v, const std::string& token) {
  claims c;
  return v.verify(token, now, c);
}

} // namespace

TEST_CASE("HS256: a good token gives its claims", "[auth][jwt]") {
  auto v = make(jwt_algorithm::hs256, secret);
  auto body = base();
  body["channels"] = {"stream:1", "stream:2*"};
  body["iat"] = now - 10;
  body["nbf"] = now - 10;
  claims c;
  REQUIRE(v->verify(sign(JWT_ALG_HS256, secret, body), now, c) == token_error::none);
  CHECK(c.sub == "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ");
  CHECK(c.exp == now + 60);
  REQUIRE(c.channels);
  CHECK(*c.channels == std::vector<std::string>{"stream:1", "stream:2*"});
}

TEST_CASE("time claims with leeway", "[auth][jwt]") {
  auto v = make(jwt_algorithm::hs256, secret);
  auto with = [&](const char* k, std::int64_t t) {
    auto b = base();
    b[k] = t;
    return check(*v, sign(JWT_ALG_HS256, secret, b));
  };
  CHECK(with("exp", now - 6) == token_error::expired);
  CHECK(with("exp", now - 5) == token_error::none); // within the 5 s leeway
  CHECK(with("nbf", now + 6) == token_error::not_yet_valid);
  CHECK(with("nbf", now + 5) == token_error::none);
  CHECK(with("iat", now + 6) == token_error::issued_in_future);
  CHECK(with("iat", now + 5) == token_error::none);
  auto b = base();
  b.erase("exp");
  CHECK(check(*v, sign(JWT_ALG_HS256, secret, b)) == token_error::missing_exp);
  b["exp"] = "tomorrow";
  CHECK(check(*v, sign(JWT_ALG_HS256, secret, b)) == token_error::malformed);
  b["exp"] = static_cast<double>(now) + 30.5; // NumericDate may be fractional
  CHECK(check(*v, sign(JWT_ALG_HS256, secret, b)) == token_error::none);
}

// Found by a tester: exp near INT64_MAX overflowed `exp + leeway` (refused as
// expired) and exp centuries away overflowed the expiry timers (closed at
// once). NumericDates are now bounded to 1970 .. 9999-12-31T23:59:59Z.
TEST_CASE("time claims out of range are malformed, the largest one is fine",
          "[auth][jwt][bad-input]") {
  auto v = make(jwt_algorithm::hs256, secret);
  auto with = [&](const char* k, const nlohmann::json& t) {
    auto b = base();
    b[k] = t;
    return check(*v, sign(JWT_ALG_HS256, secret, b));
  };
  CHECK(with("exp", 253402300799LL) == token_error::none);
  CHECK(with("exp", 253402300800LL) == token_error::malformed);
  CHECK(with("exp", INT64_MAX) == token_error::malformed);
  CHECK(with("exp", 1.8e19) == token_error::malformed);
  CHECK(with("exp", 9e15) == token_error::malformed);
  CHECK(with("exp", 1e300) == token_error::malformed);
  CHECK(with("nbf", -1) == token_error::malformed);
  CHECK(with("nbf", INT64_MIN) == token_error::malformed);
  CHECK(with("iat", -1.5) == token_error::malformed);
}

TEST_CASE("signatures: wrong secret, tampered payload", "[auth][jwt]") {
  auto v = make(jwt_algorithm::hs256, secret);
  CHECK(check(*v, sign(JWT_ALG_HS256, secret + "x", base())) == token_error::bad_signature);
  auto good = sign(JWT_ALG_HS256, secret, base());
  auto other = base();
  other["sub"] = "GBOTHER";
  auto forged =
    good.substr(0, good.find('.') + 1) + b64url(other.dump()) + good.substr(good.rfind('.'));
  CHECK(check(*v, forged) == token_error::bad_signature);
  CHECK(check(*v, good.substr(0, good.rfind('.') + 1)) == token_error::bad_signature);
}

TEST_CASE("alg none is refused, signed or not", "[auth][jwt][attack]") {
  auto v = make(jwt_algorithm::hs256, secret);
  for (std::string alg : {"none", "None", "NONE"}) {
    auto head = b64url(json{{"alg", alg}, {"typ", "JWT"}}.dump());
    auto body = b64url(base().dump());
    CHECK(check(*v, head + "." + body + ".") == token_error::wrong_algorithm);
    CHECK(check(*v, head + "." + body + "." + b64url("sig")) == token_error::wrong_algorithm);
  }
  // libjwt itself makes an unsigned token when asked for alg none.
  CHECK(check(*v, sign(JWT_ALG_NONE, "", base())) == token_error::wrong_algorithm);
}

TEST_CASE("crit: a header naming extensions is refused, signed or not", "[auth][jwt][attack]") {
  // RFC 7515 section 4.1.11: Herald understands no extension, so it must
  // reject every token whose header has `crit` (was: accepted).
  auto v = make(jwt_algorithm::hs256, secret);
  for (json h : {json{{"crit", {"foo"}}, {"foo", 1}}, json{{"crit", {"b64"}}, {"b64", false}},
                 json{{"crit", {"exp"}}}, json{{"crit", json::array()}}, json{{"crit", "foo"}},
                 json{{"crit", nullptr}}}) {
    INFO(h.dump());
    auto token = sign(JWT_ALG_HS256, secret, base(), h);
    // The header really carries it (as libjwt reads it).
    jwt_t* raw = nullptr;
    REQUIRE(jwt_decode(&raw, token.c_str(), nullptr, 0) == 0);
    std::unique_ptr<jwt_t, decltype(&jwt_free)> parsed{raw, &jwt_free};
    std::unique_ptr<char, decltype(&std::free)> text{jwt_get_headers_json(raw, nullptr),
                                                     &std::free};
    REQUIRE(text);
    auto head = json::parse(text.get());
    CHECK(head.contains("crit"));
    CHECK(check(*v, token) == token_error::critical_header);
  }
  CHECK(to_string(token_error::critical_header) ==
        "token header has crit (extensions Herald does not understand)");
  // The same token without crit is good: the refusal is about crit alone.
  CHECK(check(*v, sign(JWT_ALG_HS256, secret, base(), {{"foo", 1}})) == token_error::none);
  // RS256 too: checked before the signature, whatever the algorithm.
  auto rsa = herald::test::rsa_pair();
  auto r = make(jwt_algorithm::rs256, rsa.public_pem);
  CHECK(check(*r, sign(JWT_ALG_RS256, rsa.private_pem, base(), {{"crit", {"foo"}}, {"foo", 1}})) ==
        token_error::critical_header);
}

TEST_CASE("jku, jwk, x5u, x5c, kid: never used to pick a key (ignored)", "[auth][jwt][attack]") {
  // RFC 8725 section 3.10: the key is the configured one. A token pointing at
  // another key (URL or embedded) verifies against ours or not at all.
  auto v = make(jwt_algorithm::hs256, secret);
  const json pointers = {{"jku", "https://evil.example/jwks.json"},
                         {"x5u", "https://evil.example/cert.pem"},
                         {"kid", "../../dev/null"},
                         {"jwk", {{"kty", "oct"}, {"k", b64url("attacker-key")}}},
                         {"x5c", {"MIIB"}}};
  CHECK(check(*v, sign(JWT_ALG_HS256, secret, base(), pointers)) == token_error::none);
  const std::string attacker = "attacker-key-attacker-key-attacker-key";
  CHECK(check(*v, sign(JWT_ALG_HS256, attacker, base(), pointers)) == token_error::bad_signature);
  auto rsa = herald::test::rsa_pair();
  auto other = herald::test::rsa_pair();
  auto r = make(jwt_algorithm::rs256, rsa.public_pem);
  CHECK(check(*r, sign(JWT_ALG_RS256, other.private_pem, base(),
                       {{"jwk", {{"kty", "RSA"}}}, {"x5u", "https://evil.example/c.pem"}})) ==
        token_error::bad_signature);
}

TEST_CASE("key confusion: HS256 keyed with the RSA public key", "[auth][jwt][attack]") {
  auto rsa = herald::test::rsa_pair();
  auto v = make(jwt_algorithm::rs256, rsa.public_pem);
  // The good case first, so the refusal below is about the algorithm.
  CHECK(check(*v, sign(JWT_ALG_RS256, rsa.private_pem, base())) == token_error::none);
  auto forged = sign(JWT_ALG_HS256, rsa.public_pem, base());
  CHECK(check(*v, forged) == token_error::wrong_algorithm);
  CHECK(check(*v, sign(JWT_ALG_RS512, rsa.private_pem, base())) == token_error::wrong_algorithm);
  auto other = herald::test::rsa_pair();
  CHECK(check(*v, sign(JWT_ALG_RS256, other.private_pem, base())) == token_error::bad_signature);
}

TEST_CASE("ES256", "[auth][jwt]") {
  auto ec = herald::test::ec_pair();
  auto v = make(jwt_algorithm::es256, ec.public_pem);
  CHECK(check(*v, sign(JWT_ALG_ES256, ec.private_pem, base())) == token_error::none);
  CHECK(check(*v, sign(JWT_ALG_HS256, ec.public_pem, base())) == token_error::wrong_algorithm);
  CHECK(check(*v, sign(JWT_ALG_ES256, herald::test::ec_pair().private_pem, base())) ==
        token_error::bad_signature);
}

TEST_CASE("issuer and audience", "[auth][jwt]") {
  auto v = make(jwt_algorithm::hs256, secret, "https://anchor.example", "herald");
  auto with = [&](json extra) {
    auto b = base();
    b.update(extra);
    return check(*v, sign(JWT_ALG_HS256, secret, b));
  };
  CHECK(with({{"iss", "https://anchor.example"}, {"aud", "herald"}}) == token_error::none);
  CHECK(with({{"iss", "https://anchor.example"}, {"aud", {"other", "herald"}}}) ==
        token_error::none);
  CHECK(with({{"iss", "https://evil.example"}, {"aud", "herald"}}) == token_error::wrong_issuer);
  CHECK(with({{"aud", "herald"}}) == token_error::wrong_issuer);
  CHECK(with({{"iss", "https://anchor.example"}, {"aud", "other"}}) == token_error::wrong_audience);
  CHECK(with({{"iss", "https://anchor.example"}, {"aud", {"other"}}}) ==
        token_error::wrong_audience);
  CHECK(with({{"iss", "https://anchor.example"}}) == token_error::wrong_audience);
}

TEST_CASE("malformed tokens and claims", "[auth][jwt][bad-input]") {
  auto v = make(jwt_algorithm::hs256, secret);
  CHECK(check(*v, "") == token_error::missing);
  CHECK(check(*v, std::string(max_token_bytes + 1, 'a')) == token_error::too_large);
  for (std::string t : {"a", "a.b", "a.b.c.d", "..", "a..c", "a b.c.d", "é.b.c", "a.b.c\n"})
    CHECK(check(*v, t) == token_error::malformed);
  CHECK(check(*v, b64url("{") + "." + b64url("{}") + ".c") == token_error::malformed);
  auto b = base();
  b.erase("sub");
  CHECK(check(*v, sign(JWT_ALG_HS256, secret, b)) == token_error::missing_sub);
  b = base();
  b["channels"] = "stream:1";
  CHECK(check(*v, sign(JWT_ALG_HS256, secret, b)) == token_error::malformed);
  b["channels"] = {1, 2};
  CHECK(check(*v, sign(JWT_ALG_HS256, secret, b)) == token_error::malformed);
}

TEST_CASE("configuration checks", "[auth][jwt]") {
  std::string error;
  CHECK_FALSE(jwt_verifier::create(config_of(jwt_algorithm::hs256, "short"), error));
  CHECK(error.find("32 bytes") != std::string::npos);
  CHECK_FALSE(jwt_verifier::create(config_of(jwt_algorithm::rs256, "not a pem"), error));
  auto ec = herald::test::ec_pair();
  CHECK_FALSE(jwt_verifier::create(config_of(jwt_algorithm::rs256, ec.public_pem), error));
  CHECK(error.find("RSA") != std::string::npos);
  CHECK_FALSE(jwt_verifier::create(
    config_of(jwt_algorithm::es256, herald::test::rsa_pair().public_pem), error));
  CHECK_FALSE(jwt_verifier::create(
    config_of(jwt_algorithm::rs256, herald::test::rsa_pair(1024).public_pem), error));
  CHECK(parse_algorithm("HS256") == jwt_algorithm::hs256);
  CHECK_FALSE(parse_algorithm("none"));
  CHECK_FALSE(parse_algorithm("hs256"));
}

TEST_CASE("a header or claims set that names a key twice is malformed, even signed",
          "[auth][jwt][attack]") {
  auto v = make(jwt_algorithm::hs256, secret);
  // Signed by hand: libjwt would keep one of the two values silently.
  auto hs256 = [](const std::string& header, const std::string& payload) {
    auto input = herald::test::b64url(header) + "." + herald::test::b64url(payload);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
         reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, &len);
    return input + "." + herald::test::b64url(std::string(reinterpret_cast<char*>(mac), len));
  };
  const std::string header = R"({"alg":"HS256","typ":"JWT"})";
  const std::string exp = std::to_string(now + 60);
  const std::string sub = R"("sub":"GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ")";
  CHECK(check(*v, hs256(header, "{" + sub + R"(,"exp":)" + exp + "}")) == token_error::none);
  CHECK(check(*v, hs256(header, "{" + sub + R"(,"sub":"GBOTHER","exp":)" + exp + "}")) ==
        token_error::malformed);
  CHECK(check(*v, hs256(header, "{" + sub + R"(,"exp":1,"exp":)" + exp + "}")) ==
        token_error::malformed);
  CHECK(check(*v, hs256(R"({"alg":"HS256","alg":"HS256"})",
                        "{" + sub + R"(,"exp":)" + exp + "}")) == token_error::malformed);
}
