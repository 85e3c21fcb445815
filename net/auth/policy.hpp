// Authentication and channel permissions (pure): who a client is, what it
// may read, whether a publisher's API key and a browser's Origin are
// accepted. No I/O, no clock: callers pass the time. Thread-safe (const).
// docs/auth.md is the contract.
#pragma once

#include "net/auth/jwt_verifier.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace herald::net::auth {

/// Who a connection is.
struct principal {
  /// True once a valid token was presented (or authentication is off:
  /// --insecure without a JWT key).
  bool authenticated = false;
  std::string sub;      ///< the token's `sub` (empty when anonymous or auth is off)
  std::int64_t exp = 0; ///< token expiry, seconds since the Unix epoch; 0: never
  std::optional<std::vector<std::string>> channels; ///< the `channels` claim, when present
};

/// What the server enforces. Built once at start-up (app/auth_setup).
struct policy {
  /// Subscriber tokens; null when --insecure and no JWT key: every client
  /// may read every channel without a token.
  std::shared_ptr<const jwt_verifier> verifier;
  /// SHA-256 of the publish API key; nullopt when --insecure and no key:
  /// anyone may publish.
  std::optional<std::array<unsigned char, 32>> api_key_digest;
  bool anonymous_streams = false;           ///< clients without a token may read stream: channels
  std::vector<std::string> allowed_origins; ///< browser origins allowed; "*": any
  std::chrono::milliseconds ws_auth_timeout{5'000}; ///< time to send {"op":"connect"}
  std::chrono::seconds refresh_grace{25};           ///< WS: refresh window before expiry

  /// True when subscribers need no token at all (--insecure, no JWT key).
  bool auth_off() const noexcept { return verifier == nullptr; }
};

/// SHA-256 of `key` (OpenSSL), the form the API key is kept in.
std::array<unsigned char, 32> digest_of(std::string_view key);

/// Checks a publish request's `Authorization` header value (may be empty).
/// Compares SHA-256 digests with CRYPTO_memcmp, so the time taken does not
/// depend on how much of the key matched nor on its length.
/// @returns true when the policy has no API key or the header is exactly
///          `Bearer <key>` (scheme case-insensitive, RFC 6750 §2.1).
bool api_key_accepted(const policy& p, std::string_view authorization);

/// Checks the API key of a Centrifugo server API request (POST /api/...):
/// `X-API-Key: <key>`, or `Authorization: apikey <key>` (scheme
/// case-insensitive), as Centrifugo reads them. Same constant-time digest
/// comparison as api_key_accepted. @returns true when the policy has no API
/// key or either header carries it.
bool api_key_header_accepted(const policy& p, std::string_view x_api_key,
                             std::string_view authorization);

/// The token of an `Authorization: Bearer <token>` header value (RFC 6750
/// §2.1; scheme case-insensitive). @returns empty when the value is absent
/// or uses another scheme.
std::string_view bearer_token(std::string_view authorization) noexcept;

/// The key of an `Authorization: apikey <key>` header value (Centrifugo's
/// server API; scheme case-insensitive). @returns empty when the value is
/// absent or uses another scheme.
std::string_view apikey_credentials(std::string_view authorization) noexcept;

/// Verifies `token` at `now` (s since the Unix epoch) and makes the
/// principal. With auth off returns an authenticated principal without
/// looking at the token. @returns token_error::none or why it was refused.
token_error authenticate(const policy& p, std::string_view token, std::int64_t now, principal& out);

/// The anonymous principal of a connection that sent no token: with auth
/// off it may read everything; otherwise it is not authenticated.
principal anonymous(const policy& p);

/// True when `who` may read `channel` (a name validate_channel accepted):
/// - auth off: always;
/// - not authenticated: only `stream:` channels, and only with
///   --anonymous-streams;
/// - `user:{address}`: only when `sub` is exactly `address` (a valid
///   SEP-23 account StrKey `G...`). A `sub` of the SEP-10 shared-account
///   form `G...:memo`, a muxed `M...` or any non-StrKey value matches no
///   `user:` channel;
/// - `stream:{id}`: any authenticated principal;
/// - in every case a `channels` claim narrows it further: the channel must
///   equal one entry, or start with an entry's text before a trailing `*`.
bool may_read(const policy& p, const principal& who, std::string_view channel);

/// Whether a WebSocket upgrade's `Origin` header is accepted (cross-site
/// WebSocket hijacking defence). No Origin (non-browser clients): accepted.
/// Otherwise accepted when listed in allowed_origins (exact, ASCII
/// case-insensitive), when the list holds "*", or when the origin is this
/// server itself (`http://` or `https://` followed by the request's Host).
bool origin_allowed(const policy& p, std::string_view origin, std::string_view host);

/// The value for `Access-Control-Allow-Origin` on an SSE answer to a
/// request from `origin`: `origin` itself when listed (or "*" is listed),
/// empty otherwise (the browser then refuses the cross-origin read).
std::string cors_origin(const policy& p, std::string_view origin);

} // namespace herald::net::auth
