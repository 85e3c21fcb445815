// Start-up checks of the authentication options (app/auth_setup.hpp) that
// name what to change, and docs/auth.md saying the same.
#include "app/auth_setup.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

using namespace herald::app;

namespace {

// The one message load_auth() gives, or every message joined by " | ".
std::string messages(config& cfg, const environment& env, bool require_keys = true) {
  std::string out;
  for (const auto& m : load_auth(cfg, env, require_keys))
    out += (out.empty() ? "" : " | ") + m;
  return out;
}

} // namespace

TEST_CASE(
  "RS256/ES256 with HERALD_JWT_SECRET set: the message names the variable, as docs/auth.md does") {
  for (auto alg : {"RS256", "ES256"}) {
    INFO(alg);
    config cfg;
    cfg.jwt_algorithm = alg;
    cfg.insecure = true;
    // Was: "... verifies with --jwt-public-key; remove the HS256 secret".
    CHECK(messages(cfg, {{"HERALD_JWT_SECRET", "0123456789abcdef0123456789abcdef"}}) ==
          std::string{"--jwt-algorithm="} + alg +
            " verifies with --jwt-public-key; unset the environment variable "
            "HERALD_JWT_SECRET (an HS256 secret)");
  }
  std::ifstream in{std::string{HERALD_SOURCE_DIR} + "/docs/auth.md"};
  REQUIRE(in);
  std::ostringstream doc;
  doc << in.rdbuf();
  CHECK(doc.str().find("`unset the\nenvironment variable HERALD_JWT_SECRET`") != std::string::npos);
}

TEST_CASE("RS256 with --jwt-secret-file: the message names the option") {
  config cfg;
  cfg.jwt_algorithm = "RS256";
  cfg.jwt_secret_file = "/nonexistent/secret";
  cfg.insecure = true;
  CHECK(messages(cfg, {}) ==
        "--jwt-algorithm=RS256 verifies with --jwt-public-key; remove --jwt-secret-file (an "
        "HS256 secret)");
}

TEST_CASE("every key problem is reported at once, each naming where the key came from") {
  // Was: one message per run (the first problem found).
  config cfg;
  auto all = messages(cfg, {{"HERALD_JWT_SECRET", "short"}, {"HERALD_API_KEY", "short-too"}});
  CHECK(all == "the environment variable HERALD_JWT_SECRET: the HS256 secret must be at least 32 "
               "bytes | the environment variable HERALD_API_KEY: the API key must be at least 16 "
               "bytes");
  CHECK_FALSE(cfg.auth);
  config bad_alg;
  bad_alg.jwt_algorithm = "HS512";
  bad_alg.api_key_file = "/nonexistent/api-key";
  CHECK(messages(bad_alg, {}) == "--jwt-algorithm must be HS256, RS256 or ES256 | --api-key-file: "
                                 "cannot read /nonexistent/api-key");
}

TEST_CASE("missing keys are an error only when required (not for --dump-config)") {
  config cfg;
  CHECK(messages(cfg, {}).rfind("refusing to start: no JWT secret", 0) == 0);
  config dump;
  CHECK(messages(dump, {}, false).empty());
  CHECK(dump.auth);
  config ok;
  CHECK(messages(ok, {{"HERALD_JWT_SECRET", "0123456789abcdef0123456789abcdef"},
                      {"HERALD_API_KEY", "0123456789abcdef"}})
          .empty());
  REQUIRE(ok.auth);
  CHECK(ok.auth->verifier);
  CHECK(ok.auth->api_key_digest);
}
