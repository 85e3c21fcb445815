// accept_key: the one computation of the WebSocket opening handshake that
// needs a hash (RFC 6455 section 4.2.2), on OpenSSL; apart from ws_session so
// the upgrade's fuzz target (tests/fuzz/ws_upgrade.cpp) links it alone.
#pragma once

#include <string>
#include <string_view>

namespace herald::net::ws {

/// The `Sec-WebSocket-Accept` value for the client's `Sec-WebSocket-Key`
/// (RFC 6455 section 4.2.2 item 5.4): base64 of the SHA-1 of the key as
/// sent followed by the GUID 258EAFA5-E914-47DA-95CA-C5AB0DC85B11, 28
/// characters; OpenSSL's SHA-1 and base64. Any key (http_session checked it
/// first: net/wire/ws/upgrade.hpp check_upgrade). Never fails.
std::string accept_key(std::string_view key);

} // namespace herald::net::ws
