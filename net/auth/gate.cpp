#include "net/auth/gate.hpp"

namespace herald::net::auth {

// The key is looked for only where each route reads it: a refusal for a key
// that is not there names that place (a key sent in another route's header
// was: "the API key is not accepted", as if it were wrong).
gate_result check_publish(const policy& p, std::string_view authorization) {
  if (api_key_accepted(p, authorization))
    return {};
  return {errc::unauthorized,
          bearer_token(authorization).empty() ? "publishing needs Authorization: Bearer <API key>"
                                              : "the API key is not accepted",
          {}};
}

gate_result check_channel_position(const policy& p, std::string_view authorization) {
  if (api_key_accepted(p, authorization))
    return {};
  return {errc::unauthorized,
          bearer_token(authorization).empty()
            ? "reading a channel's position needs Authorization: Bearer <API key>"
            : "the API key is not accepted",
          {}};
}

gate_result check_server_api(const policy& p, std::string_view x_api_key,
                             std::string_view authorization) {
  if (api_key_header_accepted(p, x_api_key, authorization))
    return {};
  if (!x_api_key.empty() || !apikey_credentials(authorization).empty())
    return {errc::unauthorized, "the API key is not accepted", {}};
  return {errc::unauthorized,
          bearer_token(authorization).empty()
            ? "the server API needs X-API-Key: <key> or Authorization: apikey <key>"
            : "the server API needs X-API-Key: <key> or Authorization: apikey <key> "
              "(Authorization: Bearer is read by /v1/publish)",
          {}};
}

gate_result check_ws_upgrade(const policy& p, std::string_view origin, std::string_view host,
                             std::string_view authorization, std::int64_t now) {
  if (!origin_allowed(p, origin, host))
    return {errc::forbidden, "Origin not allowed (see --allowed-origins)", {}};
  auto token = bearer_token(authorization);
  if (token.empty())
    return {errc::none, {}, anonymous(p)};
  gate_result r;
  if (auto e = authenticate(p, token, now, r.who); e != token_error::none)
    return {errc::unauthorized, std::string{to_string(e)}, {}};
  return r;
}

gate_result check_sse(const policy& p, std::string_view authorization, std::string_view query_token,
                      const std::vector<std::string>& channels, std::int64_t now) {
  gate_result r;
  auto token = authorization.empty() ? query_token : bearer_token(authorization);
  if (!authorization.empty() && token.empty() && !p.auth_off())
    return {errc::unauthorized, "Authorization must be Bearer <token>", {}};
  if (token.empty()) {
    r.who = anonymous(p);
  } else if (auto e = authenticate(p, token, now, r.who); e != token_error::none) {
    return {errc::unauthorized, std::string{to_string(e)}, {}};
  }
  for (const auto& c : channels) {
    if (may_read(p, r.who, c))
      continue;
    if (!r.who.authenticated)
      return {errc::unauthorized, "a token is required for " + c, {}};
    return {errc::forbidden, "the token does not allow " + c, {}};
  }
  return r;
}

} // namespace herald::net::auth
