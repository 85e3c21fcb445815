// Centrifugo's client protocol v2 in its Protobuf encoding (pure codec: no
// Asio, no clock), as the SDKs for iOS (centrifuge-swift), Android
// (centrifuge-java), Flutter (centrifuge-dart) and the JavaScript SDK's
// Protobuf build speak it on /connection/websocket with the WebSocket
// subprotocol `centrifuge-protobuf` (or `?format=protobuf`).
//
// A binary WebSocket message from the client holds one or more `Command`s,
// each preceded by its length as a base-128 varint (Protobuf's
// "length-delimited" framing, as protobufjs `encodeDelimited` writes it);
// Herald writes one length-delimited `Reply` per message. The messages and
// field numbers are Centrifugo's (centrifugal/protocol
// `definitions/client.proto`); Herald's subset is net/wire/centrifugo/client.proto,
// encoded and decoded by Debian's libprotobuf (lite runtime). The commands
// and replies mean what their JSON forms mean (protocol.hpp): one
// `centrifugo::command` struct and one set of error codes for both encodings.
// A publication's data (JSON text) travels unchanged as `Publication.data`
// bytes, so JSON and Protobuf subscribers share a channel and its history.
#pragma once

#include "net/wire/centrifugo/protocol.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace herald::net::centrifugo::protobuf {

/// Splits `message` (one binary WebSocket message) into its length-delimited
/// commands and decodes each. Never throws. An entry with `ok == false` and
/// id 0 ends the list: the framing is broken there (a truncated or overlong
/// varint, a length past the end of the message) or the command is not a
/// `Command` (bad wire data); the connection is then closed with 3501. A
/// readable command with a bad field value (an offset over 2^53-1, a
/// negative flag, an epoch over 64 bytes, two methods, none) is refused with
/// its id and error 107. Unknown fields are skipped. An empty message holds
/// no command; a zero-length command with no id is the client's pong.
std::vector<parsed> parse_commands(std::string_view message);

/// The end offset of each length-delimited command of `message`; where the
/// framing breaks, the rest of the message counts as one last command.
std::vector<std::size_t> command_ends(std::string_view message);

/// `bytes` with its length as a base-128 varint before it (one delimited record).
std::string delimited(std::string_view bytes);

} // namespace herald::net::centrifugo::protobuf
