// auth_setup: builds the authentication policy (net/auth/policy.hpp) from
// the options and the environment at start-up. docs/auth.md describes it.
#pragma once

#include "app/config.hpp"
#include "app/options.hpp"

#include <string>
#include <vector>

namespace herald::app {

/// Reads the JWT key (HERALD_JWT_SECRET / --jwt-secret-file for HS256,
/// --jwt-public-key for RS256 / ES256) and the publish API key
/// (HERALD_API_KEY / --api-key-file), checks them, and sets `cfg.auth` when
/// every check passed. Secure by default: a missing JWT key or API key is an
/// error naming what is missing, unless `cfg.insecure` (then that check is
/// off; log_auth() warns). Files are read whole; trailing CR/LF is dropped.
/// Logs nothing. Called by load_config() (app/options.hpp) in its one
/// validation pass, so every problem is reported in one run.
/// @param env the environment (HERALD_JWT_SECRET, HERALD_API_KEY).
/// @param require_keys false: a missing key is not an error (--dump-config,
///        whose output usually leaves the keys out); bad keys still are.
/// @returns every problem found, one message each, naming the option or the
///          environment variable it is about; empty when none.
std::vector<std::string> load_auth(config& cfg, const environment& env, bool require_keys = true);

/// Logs what load_auth() set up: the token algorithm, and a warning for each
/// check --insecure turned off. Call once logging is set up.
void log_auth(const config& cfg);

} // namespace herald::app
