// The command layer a WebSocket connection speaks over the shared session
// machinery (net/ws/ws_session.hpp, net/core/subscription_table.hpp, the
// connection actor): Herald's own JSON protocol on /v1/ws (docs/protocol.md)
// or Centrifugo's client protocol v2 in JSON on /connection/websocket
// (net/wire/centrifugo/protocol.hpp, docs/centrifugo.md).
#pragma once

#include <cstdint>

namespace herald::net::ws {

enum class dialect : std::uint8_t { herald, centrifugo };

} // namespace herald::net::ws
