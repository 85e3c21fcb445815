// upgrade: the WebSocket opening handshake (RFC 6455 section 4), Herald's
// own: the checks of the client's request, made so that every refusal is
// Herald's JSON error body (docs/protocol.md "HTTP errors"), and the server's
// 101 answer. Pure functions: no Asio, no Beast types (the accept hash needs
// SHA-1: net/ws/accept_key.hpp).
#pragma once

#include "net/wire/errors.hpp"

#include <string>
#include <string_view>

namespace herald::net::ws {

/// Checks the fields RFC 6455 section 4.2.1 asks of a client's opening
/// handshake beyond what websocket::is_upgrade checks (GET, `Connection:
/// upgrade`, `Upgrade: websocket`):
/// @param host the `Host` field's value ("" if absent: errc::invalid_request,
///        section 4.1 item 3; Beast's own handshake refused it too).
/// @param version the `Sec-WebSocket-Version` field's value ("" if absent).
/// @param key the `Sec-WebSocket-Key` field's value ("" if absent).
/// @param detail receives the reason on refusal.
/// @returns errc::upgrade_required (HTTP 426; the answer names version 13 in
///          `Sec-WebSocket-Version`, section 4.4) when the version is not
///          exactly `13`; errc::invalid_request (400) when the key is not the
///          base64 encoding of 16 bytes (24 characters ending in `==`,
///          section 4.1 item 7); errc::none otherwise.
errc check_upgrade(std::string_view host, std::string_view version, std::string_view key,
                   std::string& detail);

/// Whether a `Sec-WebSocket-Protocol` field value (a comma-separated list of
/// tokens, RFC 6455 section 4.1 item 10; optional whitespace around commas)
/// offers `name`. Case-sensitive, as subprotocol names are.
bool offers_subprotocol(std::string_view field, std::string_view name) noexcept;

/// The server's answer that opens the connection (RFC 6455 section 4.2.2
/// item 5): `HTTP/1.1 101 Switching Protocols`, `Upgrade: websocket`,
/// `Connection: Upgrade`, `Sec-WebSocket-Accept: <accept>`, `Server: herald`,
/// and `Sec-WebSocket-Protocol: <subprotocol>` when `subprotocol` is not
/// empty (one the client offered). No extension is answered, so none is in
/// use (section 9.1).
/// @param accept the accept hash of the client's key (net/ws accept_key()).
std::string encode_upgrade_response(std::string_view accept, std::string_view subprotocol);

} // namespace herald::net::ws
