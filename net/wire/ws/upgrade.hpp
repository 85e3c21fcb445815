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

/// Whether to accept permessage-deflate (RFC 7692) from the client's
/// `Sec-WebSocket-Extensions` offers (`field`: every such header's value,
/// joined with ','; RFC 6455 section 9.1 grammar: offers separated by ',',
/// parameters by ';', values tokens or quoted strings). True when one
/// `permessage-deflate` offer is acceptable to Herald, which compresses each
/// publication once with a 32 KiB window (2^15) and no context takeover and
/// shares the bytes: an offer is declined (section 5.1) when it has a
/// parameter RFC 7692 does not define, a parameter twice, a value where none
/// belongs or an invalid one (window bits other than 8-15), or a
/// `server_max_window_bits` below 15 (Herald's shared frames use 15; section
/// 7.1.2.1 lets the server decline). `client_max_window_bits` (with or without
/// a value) is accepted: Herald inflates with any window up to 15. Never throws.
bool accepts_deflate(std::string_view field) noexcept;

/// The response's `Sec-WebSocket-Extensions` value when permessage-deflate
/// is accepted: `permessage-deflate; server_no_context_takeover;
/// client_no_context_takeover` (RFC 7692 sections 7.1.1.1 and 7.1.1.2: each
/// message is compressed on its own, both ways, so no connection keeps a
/// compression context).
inline constexpr std::string_view deflate_response =
  "permessage-deflate; server_no_context_takeover; client_no_context_takeover";

/// The server's answer that opens the connection (RFC 6455 section 4.2.2
/// item 5): `HTTP/1.1 101 Switching Protocols`, `Upgrade: websocket`,
/// `Connection: Upgrade`, `Sec-WebSocket-Accept: <accept>`, `Server: herald`,
/// `Sec-WebSocket-Protocol: <subprotocol>` when `subprotocol` is not empty
/// (one the client offered), and `Sec-WebSocket-Extensions: <deflate_response>`
/// when `deflate` (accepts_deflate() said yes); else no extension is in use
/// (section 9.1).
/// @param accept the accept hash of the client's key (net/ws accept_key()).
std::string encode_upgrade_response(std::string_view accept, std::string_view subprotocol,
                                    bool deflate = false);

} // namespace herald::net::ws
