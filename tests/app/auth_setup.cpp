// Start-up checks of the authentication options (app/auth_setup.hpp) that
// name what to change, and docs/auth.md saying the same.
#include "app/auth_setup.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace herald::app;

namespace {

// Sets an environment variable for the scope (load_auth reads the process
// environment).
struct scoped_env {
  std::string name;
  scoped_env(const char* n, const char* value)
    : name(n) {
    ::setenv(n, value, 1);
  }
  ~scoped_env() { ::unsetenv(name.c_str()); }
};

} // namespace

TEST_CASE(
  "RS256/ES256 with HERALD_JWT_SECRET set: the message names the variable, as docs/auth.md does") {
  for (auto alg : {"RS256", "ES256"}) {
    INFO(alg);
    scoped_env secret{"HERALD_JWT_SECRET", "0123456789abcdef0123456789abcdef"};
    config cfg;
    cfg.jwt_algorithm = alg;
    cfg.insecure = true;
    auto msg = load_auth(cfg);
    // Was: "... verifies with --jwt-public-key; remove the HS256 secret".
    CHECK(msg == std::string{"--jwt-algorithm="} + alg +
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
  ::unsetenv("HERALD_JWT_SECRET");
  config cfg;
  cfg.jwt_algorithm = "RS256";
  cfg.jwt_secret_file = "/nonexistent/secret";
  cfg.insecure = true;
  CHECK(load_auth(cfg) ==
        "--jwt-algorithm=RS256 verifies with --jwt-public-key; remove --jwt-secret-file (an "
        "HS256 secret)");
}
