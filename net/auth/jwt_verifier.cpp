#include "net/auth/jwt_verifier.hpp"

#include "net/wire/enum_names.hpp"
#include "net/wire/json_input.hpp"

#include <jwt.h>
#include <nlohmann/json.hpp>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>

namespace herald::net::auth {

using nlohmann::json;

namespace {

struct jwt_deleter {
  void operator()(jwt_t* j) const noexcept { jwt_free(j); }
};
using jwt_ptr = std::unique_ptr<jwt_t, jwt_deleter>;

jwt_alg_t libjwt_alg(jwt_algorithm a) noexcept {
  // libjwt's identifier of each algorithm, in jwt_algorithm's order.
  constexpr jwt_alg_t algs[] = {JWT_ALG_HS256, JWT_ALG_RS256, JWT_ALG_ES256};
  static_assert(std::size(algs) == static_cast<std::size_t>(jwt_algorithm::es256) + 1);
  auto i = static_cast<std::size_t>(a);
  return i < std::size(algs) ? algs[i] : JWT_ALG_INVAL;
}

bool is_b64url(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

// Compact JWS: three base64url parts (RFC 7515 §7.1). The signature part may
// be empty here so that an unsigned token is reported as the wrong algorithm.
bool well_formed(std::string_view t) noexcept {
  std::size_t dots = 0;
  std::size_t part = 0;
  for (char c : t) {
    if (c == '.') {
      if (part == 0 && dots < 2)
        return false;
      ++dots;
      part = 0;
      continue;
    }
    if (!is_b64url(c))
      return false;
    ++part;
  }
  return dots == 2;
}

// base64url without padding (RFC 4648 section 5, as JWS uses it); the
// characters were checked by well_formed().
std::string b64url_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    int v = (c >= 'A' && c <= 'Z')   ? c - 'A'
            : (c >= 'a' && c <= 'z') ? c - 'a' + 26
            : (c >= '0' && c <= '9') ? c - '0' + 52
            : c == '-'               ? 62
                                     : 63;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

// The JOSE header and the claims set are JSON objects with no key named
// twice (RFC 7515 section 4 and RFC 7519 section 4 say to reject or keep
// the last: we reject, so that no other reader of the token, which may keep
// the first, can see other claims than Herald). `header` receives the
// JOSE header.
bool unambiguous_parts(std::string_view token, nlohmann::json& header) {
  auto first = token.find('.');
  auto second = token.find('.', first + 1);
  for (auto part : {token.substr(0, first), token.substr(first + 1, second - first - 1)}) {
    nlohmann::json doc;
    if (!parse_client_json(b64url_decode(part), doc) || !doc.is_object())
      return false;
    if (part.data() == token.data())
      header = std::move(doc);
  }
  return true;
}

// RFC 7515 section 4.1.11: a recipient that does not understand every
// extension listed in `crit` must reject the JWS. Herald understands none
// (`b64` of RFC 7797 included), so any `crit`, even an empty or malformed
// one, refuses the token. The key-selection parameters (`kid`, `jku`,
// `jwk`, `x5u`, `x5c`, `x5t`, `x5t#S256`) are ignored: the key is the
// configured one only, nothing is fetched (RFC 8725 section 3.10).
bool has_critical_extension(const nlohmann::json& header) {
  return header.contains("crit");
}

// NumericDate (RFC 7519 §2): a JSON number of seconds, maybe fractional.
// Only 0 (1970) .. 253402300799 (9999-12-31T23:59:59Z) are accepted, so
// that `exp + leeway` and the expiry timers cannot overflow; anything else is
// a malformed claim.
constexpr std::int64_t max_numeric_date = 253402300799;

bool numeric_date(const json& j, std::int64_t& out) {
  if (j.is_number_unsigned()) {
    auto v = j.get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(max_numeric_date))
      return false;
    out = static_cast<std::int64_t>(v);
    return true;
  }
  if (j.is_number_integer()) {
    out = j.get<std::int64_t>();
    return out >= 0 && out <= max_numeric_date;
  }
  if (j.is_number_float()) {
    auto d = j.get<double>();
    if (!std::isfinite(d) || d < 0 || d > static_cast<double>(max_numeric_date))
      return false;
    out = static_cast<std::int64_t>(std::floor(d));
    return true;
  }
  return false;
}

} // namespace

std::optional<jwt_algorithm> parse_algorithm(std::string_view name) noexcept {
  if (name == "HS256")
    return jwt_algorithm::hs256;
  if (name == "RS256")
    return jwt_algorithm::rs256;
  if (name == "ES256")
    return jwt_algorithm::es256;
  return std::nullopt;
}

std::string_view to_string(jwt_algorithm a) noexcept {
  return enum_name<jwt_algorithm::hs256, jwt_algorithm::es256>(a, {"HS256", "RS256", "ES256"}, "?");
}

std::string_view to_string(token_error e) noexcept {
  return enum_name<token_error::none, token_error::critical_header>(
    e,
    {"ok", "no token", "token too large", "malformed token", "token algorithm not accepted",
     "token signature invalid", "token has no exp", "token expired", "token not yet valid",
     "token issued in the future", "token issuer not accepted", "token audience not accepted",
     "token has no sub", "token header has crit (extensions Herald does not understand)"},
    "invalid token");
}

std::shared_ptr<const jwt_verifier> jwt_verifier::create(jwt_config cfg, std::string& error) {
  if (cfg.algorithm == jwt_algorithm::hs256) {
    // RFC 7518 §3.2: a key of the same size as the hash output or larger.
    if (cfg.key.size() < 32) {
      error = "the HS256 secret must be at least 32 bytes";
      return nullptr;
    }
  } else {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio{
      BIO_new_mem_buf(cfg.key.data(), static_cast<int>(cfg.key.size())), &BIO_free};
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key{
      bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr, &EVP_PKEY_free};
    if (!key) {
      error = "the public key is not a PEM public key (-----BEGIN PUBLIC KEY-----)";
      return nullptr;
    }
    if (cfg.algorithm == jwt_algorithm::rs256) {
      if (EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA) {
        error = "RS256 needs an RSA public key";
        return nullptr;
      }
      if (EVP_PKEY_bits(key.get()) < 2048) {
        error = "RS256 needs an RSA key of at least 2048 bits";
        return nullptr;
      }
    } else {
      char group[64] = {0};
      std::size_t len = 0;
      if (EVP_PKEY_base_id(key.get()) != EVP_PKEY_EC ||
          EVP_PKEY_get_group_name(key.get(), group, sizeof group, &len) != 1 ||
          std::strcmp(group, "prime256v1") != 0) {
        error = "ES256 needs an EC public key on curve P-256 (prime256v1)";
        return nullptr;
      }
    }
  }
  return std::shared_ptr<const jwt_verifier>(new jwt_verifier(std::move(cfg)));
}

token_error jwt_verifier::verify(std::string_view token, std::int64_t now, claims& out) const {
  if (token.empty())
    return token_error::missing;
  if (token.size() > max_token_bytes)
    return token_error::too_large;
  nlohmann::json header;
  if (!well_formed(token) || !unambiguous_parts(token, header))
    return token_error::malformed;
  if (has_critical_extension(header))
    return token_error::critical_header;
  std::string text{token}; // libjwt wants a NUL-terminated string
  // First pass without a key: libjwt only parses, so we can read the header
  // `alg` and refuse any other algorithm before a signature is computed.
  // (libjwt 1.10's jwt_decode would otherwise verify with the algorithm the
  // token names: `none`, or HMAC keyed with our public key.)
  {
    jwt_t* raw = nullptr;
    if (jwt_decode(&raw, text.c_str(), nullptr, 0) != 0 || raw == nullptr)
      return token_error::malformed;
    jwt_ptr parsed{raw};
    const char* alg = jwt_get_header(parsed.get(), "alg");
    if (alg == nullptr || std::string_view{alg} != to_string(cfg_.algorithm))
      return token_error::wrong_algorithm;
  }
  jwt_t* raw = nullptr;
  int rc = jwt_decode(&raw, text.c_str(), reinterpret_cast<const unsigned char*>(cfg_.key.data()),
                      static_cast<int>(cfg_.key.size()));
  jwt_ptr verified{raw};
  if (rc != 0 || !verified)
    return token_error::bad_signature;
  if (jwt_get_alg(verified.get()) != libjwt_alg(cfg_.algorithm))
    return token_error::wrong_algorithm; // defence in depth: never reached in tests
  std::unique_ptr<char, decltype(&std::free)> grants{jwt_get_grants_json(verified.get(), nullptr),
                                                     &std::free};
  if (!grants)
    return token_error::malformed;
  auto body = json::parse(grants.get(), nullptr, false);
  if (body.is_discarded() || !body.is_object())
    return token_error::malformed;
  const auto leeway = static_cast<std::int64_t>(cfg_.leeway.count());
  std::int64_t exp = 0;
  auto it = body.find("exp");
  if (it == body.end())
    return token_error::missing_exp;
  if (!numeric_date(*it, exp))
    return token_error::malformed;
  if (now > exp + leeway)
    return token_error::expired;
  if (auto nbf = body.find("nbf"); nbf != body.end()) {
    std::int64_t v = 0;
    if (!numeric_date(*nbf, v))
      return token_error::malformed;
    if (now < v - leeway)
      return token_error::not_yet_valid;
  }
  if (auto iat = body.find("iat"); iat != body.end()) {
    std::int64_t v = 0;
    if (!numeric_date(*iat, v))
      return token_error::malformed;
    if (v > now + leeway)
      return token_error::issued_in_future;
  }
  if (!cfg_.issuer.empty()) {
    auto iss = body.find("iss");
    if (iss == body.end() || !iss->is_string() || iss->get_ref<const std::string&>() != cfg_.issuer)
      return token_error::wrong_issuer;
  }
  if (!cfg_.audience.empty()) {
    // RFC 7519 §4.1.3: a string, or an array of strings.
    auto aud = body.find("aud");
    bool ok = false;
    if (aud != body.end() && aud->is_string())
      ok = aud->get_ref<const std::string&>() == cfg_.audience;
    else if (aud != body.end() && aud->is_array())
      for (const auto& a : *aud)
        ok = ok || (a.is_string() && a.get_ref<const std::string&>() == cfg_.audience);
    if (!ok)
      return token_error::wrong_audience;
  }
  auto sub = body.find("sub");
  if (sub == body.end() || !sub->is_string() || sub->get_ref<const std::string&>().empty())
    return token_error::missing_sub;
  claims c;
  c.sub = sub->get<std::string>();
  c.exp = exp;
  if (auto ch = body.find("channels"); ch != body.end()) {
    if (!ch->is_array() || ch->size() > 256)
      return token_error::malformed;
    std::vector<std::string> list;
    for (const auto& e : *ch) {
      if (!e.is_string() || e.get_ref<const std::string&>().size() > 256)
        return token_error::malformed;
      list.push_back(e.get<std::string>());
    }
    c.channels = std::move(list);
  }
  out = std::move(c);
  return token_error::none;
}

} // namespace herald::net::auth
