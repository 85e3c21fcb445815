// auth_setup: builds the authentication policy (net/auth/policy.hpp) from
// the options and the environment at start-up. docs/auth.md describes it.
#pragma once

#include "app/config.hpp"

#include <string>

namespace herald::app {

/// Reads the JWT key (HERALD_JWT_SECRET / --jwt-secret-file for HS256,
/// --jwt-public-key for RS256 / ES256) and the publish API key
/// (HERALD_API_KEY / --api-key-file), checks them, and sets `cfg.auth`.
/// Secure by default: a missing JWT key or API key is an error naming what
/// is missing, unless `cfg.insecure` (then that check is off and a warning
/// is logged). Files are read whole; trailing CR/LF is dropped.
/// @returns an empty string, or the message to print before exiting.
std::string load_auth(config& cfg);

} // namespace herald::app
