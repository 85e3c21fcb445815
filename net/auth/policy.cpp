#include "net/auth/policy.hpp"

#include "net/wire/channel_name.hpp"
#include "net/wire/strkey.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>

namespace herald::net::auth {

namespace {

bool iequals(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool claim_allows(const std::vector<std::string>& list, std::string_view channel) {
  for (const auto& e : list) {
    if (!e.empty() && e.back() == '*') {
      auto prefix = std::string_view{e}.substr(0, e.size() - 1);
      if (channel.substr(0, prefix.size()) == prefix)
        return true;
    } else if (e == channel) {
      return true;
    }
  }
  return false;
}

} // namespace

std::array<unsigned char, 32> digest_of(std::string_view key) {
  std::array<unsigned char, 32> out{};
  SHA256(reinterpret_cast<const unsigned char*>(key.data()), key.size(), out.data());
  return out;
}

namespace {
// The credentials of an `Authorization: <scheme> <credentials>` value, trimmed;
// `scheme` lower-case with its space. Empty for another scheme.
std::string_view credentials(std::string_view authorization, std::string_view scheme) noexcept {
  if (authorization.size() <= scheme.size() ||
      !iequals(authorization.substr(0, scheme.size()), scheme))
    return {};
  auto t = authorization.substr(scheme.size());
  while (!t.empty() && t.front() == ' ')
    t.remove_prefix(1);
  while (!t.empty() && t.back() == ' ')
    t.remove_suffix(1);
  return t;
}
} // namespace

std::string_view bearer_token(std::string_view authorization) noexcept {
  return credentials(authorization, "bearer ");
}

std::string_view apikey_credentials(std::string_view authorization) noexcept {
  return credentials(authorization, "apikey ");
}

bool api_key_accepted(const policy& p, std::string_view authorization) {
  if (!p.api_key_digest)
    return true;
  auto given = digest_of(bearer_token(authorization));
  // Digests have a fixed length: the comparison time says nothing about the key.
  return CRYPTO_memcmp(given.data(), p.api_key_digest->data(), given.size()) == 0 &&
         !bearer_token(authorization).empty();
}

namespace {
bool key_matches(const policy& p, std::string_view key) {
  auto given = digest_of(key);
  return CRYPTO_memcmp(given.data(), p.api_key_digest->data(), given.size()) == 0 && !key.empty();
}
} // namespace

bool api_key_header_accepted(const policy& p, std::string_view x_api_key,
                             std::string_view authorization) {
  if (!p.api_key_digest)
    return true;
  // Both are compared, whatever the first gives: the time taken says nothing.
  bool a = key_matches(p, x_api_key);
  bool b = key_matches(p, apikey_credentials(authorization));
  return a || b;
}

token_error authenticate(const policy& p, std::string_view token, std::int64_t now,
                         principal& out) {
  if (p.auth_off()) {
    out = principal{true, {}, 0, std::nullopt};
    return token_error::none;
  }
  claims c;
  auto e = p.verifier->verify(token, now, c);
  if (e != token_error::none)
    return e;
  out = principal{true, std::move(c.sub), c.exp, std::move(c.channels)};
  return token_error::none;
}

principal anonymous(const policy& p) {
  principal who;
  who.authenticated = p.auth_off();
  return who;
}

bool may_read(const policy& p, const principal& who, std::string_view channel) {
  if (p.auth_off())
    return true;
  auto kind = kind_of(channel);
  if (!who.authenticated)
    return kind == channel_kind::stream && p.anonymous_streams;
  if (kind == channel_kind::user) {
    auto address = channel.substr(5); // after "user:"
    if (!is_account_id(who.sub) || who.sub != address)
      return false;
  }
  if (who.channels && !claim_allows(*who.channels, channel))
    return false;
  return true;
}

bool origin_allowed(const policy& p, std::string_view origin, std::string_view host) {
  if (origin.empty())
    return true;
  for (const auto& o : p.allowed_origins)
    if (o == "*" || iequals(o, origin))
      return true;
  if (!host.empty()) {
    for (std::string_view scheme : {"http://", "https://"})
      if (origin.size() == scheme.size() + host.size() &&
          iequals(origin.substr(0, scheme.size()), scheme) &&
          iequals(origin.substr(scheme.size()), host))
        return true;
  }
  return false;
}

std::string cors_origin(const policy& p, std::string_view origin) {
  if (origin.empty())
    return {};
  for (const auto& o : p.allowed_origins)
    if (o == "*" || iequals(o, origin))
      return std::string{origin};
  return {};
}

} // namespace herald::net::auth
