// gate: the authentication decisions of an HTTP request, before any session
// exists (pure; the caller passes header values and the time). http_session
// turns a refusal into its HTTP status and JSON body through net/wire/errors.
// docs/auth.md is the contract.
#pragma once

#include "net/auth/policy.hpp"
#include "net/wire/errors.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace herald::net::auth {

/// Outcome of a gate: errc::none and the principal, or the refusal.
struct gate_result {
  errc code = errc::none; ///< none, unauthorized (401) or forbidden (403)
  std::string message;    ///< says why; never contains the token
  principal who;          ///< the client, when accepted
};

/// POST /v1/publish: `authorization` is the header value (may be empty).
/// @returns unauthorized unless the API key matches (or none is configured);
///          the message says the route needs `Authorization: Bearer <API
///          key>` when the header carries no Bearer credentials (absent, or
///          another scheme such as /api's `apikey`), else that the key is not
///          accepted.
gate_result check_publish(const policy& p, std::string_view authorization);

/// GET /v1/channels/{name}: the same API key as publish, with a message
/// that names this read route (was: the publish message).
gate_result check_channel_position(const policy& p, std::string_view authorization);

/// POST /api/... (Centrifugo's server API): the API key in `X-API-Key:
/// <key>` or `Authorization: apikey <key>` (net/auth/policy.hpp,
/// api_key_header_accepted). Both values may be empty.
/// @returns unauthorized unless one of them carries the key (or none is
///          configured); the message names those two headers when neither
///          holds a key (also when a Bearer one came, /v1/publish's header),
///          "the API key is not accepted" when one holds a wrong key.
gate_result check_server_api(const policy& p, std::string_view x_api_key,
                             std::string_view authorization);

/// GET /v1/ws upgrade. Refuses a browser Origin that is not allowed
/// (forbidden), and a Bearer token that does not verify (unauthorized).
/// Without a token the principal is anonymous: the client may still send
/// {"op":"connect"} after the upgrade.
/// @param now seconds since the Unix epoch.
gate_result check_ws_upgrade(const policy& p, std::string_view origin, std::string_view host,
                             std::string_view authorization, std::int64_t now);

/// GET /v1/sse. The token comes from `Authorization: Bearer` or, when that
/// header is absent, from `?token=`. A token that does not verify, or no
/// token where one is needed, is `unauthorized`; a valid token that may not
/// read one of `channels` is `forbidden` naming the first such channel (the
/// whole request is refused: nothing is streamed).
/// @param channels valid channel names (validate_channel).
gate_result check_sse(const policy& p, std::string_view authorization, std::string_view query_token,
                      const std::vector<std::string>& channels, std::int64_t now);

} // namespace herald::net::auth
