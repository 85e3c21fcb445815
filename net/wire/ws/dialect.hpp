// The command layer a WebSocket connection speaks over the shared session
// machinery (net/ws/ws_session.hpp, net/core/subscription_table.hpp, the
// connection actor), chosen once at the upgrade: Herald's own JSON protocol
// on /v1/ws (docs/protocol.md), or Centrifugo's client protocol v2 on
// /connection/websocket in JSON or, with the subprotocol
// `centrifuge-protobuf` or `?format=protobuf`, in Protobuf
// (net/wire/centrifugo/codec.hpp, docs/centrifugo.md).
#pragma once

#include <cstdint>

namespace herald::net::ws {

enum class dialect : std::uint8_t { herald, centrifugo, centrifugo_protobuf };

} // namespace herald::net::ws
