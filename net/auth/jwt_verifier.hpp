// jwt_verifier: checks a subscriber's JSON Web Token (RFC 7519) the way
// RFC 8725 (JWT Best Current Practices) asks, with Debian's libjwt doing the
// signature work (no hand-made cryptography here).
//
// The accepted algorithm is fixed by configuration (HS256 with a shared
// secret, RS256 or ES256 with a PEM public key), never taken from the token:
// a token whose header names another `alg` (`none`, HS256 against an RSA or
// EC key, ...) is refused before any signature is computed (RFC 8725 §2.1,
// §3.1). Claims checked (RFC 7519 §4.1): `exp` required, `nbf` and `iat`
// honoured, each with a small leeway for clock skew; `iss` and `aud` when
// configured (`aud` may be a string or an array, §4.1.3). A header with
// `crit` is refused (RFC 7515 §4.1.11: no extension is understood here);
// `kid`, `jku`, `jwk`, `x5u`, `x5c` are ignored (the key is configured,
// never taken from or fetched for the token, RFC 8725 §3.10). Pure: the caller
// passes the time; no I/O, no clock, no logging. Thread-safe (const).
// docs/auth.md is the contract.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace herald::net::auth {

/// Algorithms Herald accepts (RFC 7518 §3.1 names).
enum class jwt_algorithm : std::uint8_t { hs256, rs256, es256 };

/// Parses "HS256", "RS256" or "ES256" (exact case). @returns nullopt otherwise.
std::optional<jwt_algorithm> parse_algorithm(std::string_view name) noexcept;

/// The RFC 7518 name of `a` ("HS256", ...).
std::string_view to_string(jwt_algorithm a) noexcept;

/// Why a token was refused. Values are stable; to_string gives the text
/// sent to clients in error messages and WebSocket close reasons.
enum class token_error : std::uint8_t {
  none = 0,
  missing,          ///< no token was sent
  too_large,        ///< longer than max_token_bytes
  malformed,        ///< not three base64url parts of JSON, or claims of the wrong type
  wrong_algorithm,  ///< header `alg` differs from the configured one (none, key confusion)
  bad_signature,    ///< signature does not verify with the configured key
  missing_exp,      ///< no numeric `exp` claim
  expired,          ///< now > exp + leeway
  not_yet_valid,    ///< now < nbf - leeway
  issued_in_future, ///< iat > now + leeway
  wrong_issuer,     ///< `iss` differs from the configured issuer
  wrong_audience,   ///< configured audience not in `aud`
  missing_sub,      ///< no string `sub` claim
  critical_header,  ///< header has `crit` (RFC 7515 §4.1.11): Herald understands no extension
};

/// The last token_error value (for loops over every refusal).
inline constexpr token_error last_token_error = token_error::critical_header;

/// Short stable text for `e`, e.g. "token expired".
std::string_view to_string(token_error e) noexcept;

/// Longest token accepted (bytes). Larger ones are refused unparsed.
inline constexpr std::size_t max_token_bytes = 8192;

/// The claims Herald uses from a verified token.
struct claims {
  std::string sub;      ///< subject: a Stellar account (G..., or G...:memo) or any id
  std::int64_t exp = 0; ///< expiry, seconds since the Unix epoch
  /// The optional `channels` claim: channel names, each maybe ending in `*`
  /// (prefix wildcard). nullopt when the token has no such claim.
  std::optional<std::vector<std::string>> channels;
};

/// Verifier configuration.
struct jwt_config {
  jwt_algorithm algorithm = jwt_algorithm::hs256;
  /// HS256: the shared secret (at least 32 bytes, RFC 7518 §3.2). RS256 /
  /// ES256: the PEM text of the public key (SubjectPublicKeyInfo).
  std::string key;
  std::chrono::seconds leeway{5}; ///< clock skew allowed for exp, nbf, iat
  std::string issuer;             ///< required `iss`; empty: not checked
  std::string audience;           ///< required member of `aud`; empty: not checked
};

class jwt_verifier {
public:
  /// Checks the configuration: the secret is long enough, or the PEM parses
  /// as a public key of the algorithm's type (RSA of at least 2048 bits for
  /// RS256, EC P-256 for ES256). @returns null and sets `error` (naming the
  /// problem, never echoing key bytes) when it is not usable.
  static std::shared_ptr<const jwt_verifier> create(jwt_config cfg, std::string& error);

  /// Verifies `token` (the compact JWS serialization, RFC 7515 §7.1) at
  /// time `now` (seconds since the Unix epoch). Never throws.
  /// @returns token_error::none and fills `out`, or the first failed check.
  token_error verify(std::string_view token, std::int64_t now, claims& out) const;

  const jwt_config& config() const noexcept { return cfg_; }

private:
  explicit jwt_verifier(jwt_config cfg)
    : cfg_(std::move(cfg)) {}
  jwt_config cfg_;
};

} // namespace herald::net::auth
