// upgrade: the checks of a WebSocket opening handshake request that Beast
// would answer in plain text, made first so that every refusal is Herald's
// JSON error body (docs/protocol.md "HTTP errors"). Pure functions: no Asio,
// no Beast types.
#pragma once

#include "net/wire/errors.hpp"

#include <string>
#include <string_view>

namespace herald::net::ws {

/// Checks the fields RFC 6455 section 4.2.1 asks of a client's opening
/// handshake beyond what websocket::is_upgrade checks (GET, `Connection:
/// upgrade`, `Upgrade: websocket`):
/// @param version the `Sec-WebSocket-Version` field's value ("" if absent).
/// @param key the `Sec-WebSocket-Key` field's value ("" if absent).
/// @param detail receives the reason on refusal.
/// @returns errc::upgrade_required (HTTP 426; the answer names version 13 in
///          `Sec-WebSocket-Version`, section 4.4) when the version is not
///          exactly `13`; errc::invalid_request (400) when the key is not the
///          base64 encoding of 16 bytes (24 characters ending in `==`,
///          section 4.1 item 7); errc::none otherwise.
errc check_upgrade(std::string_view version, std::string_view key, std::string& detail);

/// Whether a `Sec-WebSocket-Protocol` field value (a comma-separated list of
/// tokens, RFC 6455 section 4.1 item 10; optional whitespace around commas)
/// offers `name`. Case-sensitive, as subprotocol names are.
bool offers_subprotocol(std::string_view field, std::string_view name) noexcept;

} // namespace herald::net::ws
