#include "app/auth_setup.hpp"

#include <spdlog/spdlog.h>

#include <fstream>
#include <iterator>
#include <sstream>

namespace herald::app {

namespace {

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return false;
  out.assign(std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{});
  if (in.bad())
    return false;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r'))
    out.pop_back();
  return true;
}

std::string trim(std::string s) {
  auto b = s.find_first_not_of(" \t");
  auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string{} : s.substr(b, e - b + 1);
}

} // namespace

std::vector<std::string> load_auth(config& cfg, const environment& env, bool require_keys) {
  std::vector<std::string> errors;
  auto env_value = [&env](const char* name) -> const std::string* {
    auto i = env.find(name);
    return i == env.end() ? nullptr : &i->second;
  };
  auto pol = std::make_shared<net::auth::policy>();
  pol->anonymous_streams = cfg.anonymous_streams;
  pol->ws_auth_timeout = std::chrono::seconds(cfg.ws_auth_timeout);
  pol->refresh_grace = std::chrono::seconds(cfg.token_refresh_grace);
  std::stringstream origins{cfg.allowed_origins};
  for (std::string o; std::getline(origins, o, ',');)
    if (auto t = trim(o); !t.empty())
      pol->allowed_origins.push_back(std::move(t));

  // -- subscriber tokens ------------------------------------------------------
  std::string missing;
  const std::string* env_secret = env_value("HERALD_JWT_SECRET");
  bool have_secret = !cfg.jwt_secret_file.empty() || (env_secret && !env_secret->empty());
  auto alg = net::auth::parse_algorithm(cfg.jwt_algorithm);
  if (!alg) {
    // The key cannot be checked without knowing the algorithm.
    errors.push_back("--jwt-algorithm must be HS256, RS256 or ES256");
  } else {
    net::auth::jwt_config jc;
    jc.algorithm = *alg;
    jc.leeway = std::chrono::seconds(cfg.jwt_leeway);
    jc.issuer = cfg.jwt_issuer;
    jc.audience = cfg.jwt_audience;
    std::string key_from; // the option or variable the key came from, for messages
    bool key_error = false;
    if (*alg == net::auth::jwt_algorithm::hs256) {
      if (!cfg.jwt_public_key.empty()) {
        errors.push_back(
          "--jwt-public-key needs --jwt-algorithm=RS256 or ES256 (HS256 uses a secret)");
        key_error = true;
      }
      if (!cfg.jwt_secret_file.empty()) {
        key_from = "--jwt-secret-file";
        if (!read_file(cfg.jwt_secret_file, jc.key)) {
          errors.push_back("--jwt-secret-file: cannot read " + cfg.jwt_secret_file);
          key_error = true;
        }
      } else if (env_secret) {
        key_from = "the environment variable HERALD_JWT_SECRET";
        jc.key = *env_secret;
      }
    } else {
      // An HS256 secret next to a public key invites the key-confusion attack
      // (RFC 8725 section 2.1): refuse both, naming where the secret came from.
      key_from = "--jwt-public-key";
      if (!cfg.jwt_secret_file.empty()) {
        errors.push_back("--jwt-algorithm=" + cfg.jwt_algorithm +
                         " verifies with --jwt-public-key; remove --jwt-secret-file (an HS256 "
                         "secret)");
        key_error = true;
      } else if (have_secret) {
        errors.push_back("--jwt-algorithm=" + cfg.jwt_algorithm +
                         " verifies with --jwt-public-key; unset the environment variable "
                         "HERALD_JWT_SECRET (an HS256 secret)");
        key_error = true;
      }
      if (!cfg.jwt_public_key.empty() && !read_file(cfg.jwt_public_key, jc.key)) {
        errors.push_back("--jwt-public-key: cannot read " + cfg.jwt_public_key);
        key_error = true;
      }
    }
    if (jc.key.empty()) {
      if (!cfg.insecure && !key_error)
        missing = *alg == net::auth::jwt_algorithm::hs256
                    ? "no JWT secret (set HERALD_JWT_SECRET or --jwt-secret-file)"
                    : "no JWT public key (--jwt-public-key)";
    } else if (!key_error) {
      std::string error;
      pol->verifier = net::auth::jwt_verifier::create(std::move(jc), error);
      if (!pol->verifier)
        errors.push_back(key_from + ": " + error);
    }
  }

  // -- publish API key --------------------------------------------------------
  std::string key;
  std::string key_from;
  bool key_error = false;
  if (!cfg.api_key_file.empty()) {
    key_from = "--api-key-file";
    if (!read_file(cfg.api_key_file, key)) {
      errors.push_back("--api-key-file: cannot read " + cfg.api_key_file);
      key_error = true;
    }
  } else if (const std::string* v = env_value("HERALD_API_KEY")) {
    key_from = "the environment variable HERALD_API_KEY";
    key = *v;
  }
  if (!key.empty()) {
    if (key.size() < 16)
      errors.push_back(key_from + ": the API key must be at least 16 bytes");
    else
      pol->api_key_digest = net::auth::digest_of(key);
  } else if (!cfg.insecure && !key_error) {
    missing += std::string{missing.empty() ? "" : " and "} +
               "no publish API key (set HERALD_API_KEY or --api-key-file)";
  }
  if (!missing.empty() && require_keys)
    errors.push_back("refusing to start: " + missing +
                     "; --insecure runs without these checks (development only)");
  if (errors.empty())
    cfg.auth = std::move(pol);
  return errors;
}

void log_auth(const config& cfg) {
  const auto& pol = cfg.auth;
  if (!pol)
    return;
  if (cfg.insecure && pol->auth_off())
    spdlog::warn("INSECURE: no JWT key: every client may read every channel without a token "
                 "(--insecure)");
  if (cfg.insecure && !pol->api_key_digest)
    spdlog::warn("INSECURE: no API key: anyone who reaches the port may publish (--insecure)");
  if (pol->verifier)
    spdlog::info("auth: subscribers need a {} token{}", cfg.jwt_algorithm,
                 cfg.anonymous_streams ? " (stream: channels readable without one)" : "");
}

} // namespace herald::app
