// Herald's opening handshake: the request checks and the 101 answer
// (net/wire/ws/upgrade.hpp); the same requests against the real server are in
// e2e.ws_framing.
#include "net/wire/ws/upgrade.hpp"

#include <catch2/catch.hpp>

using herald::errc;
using herald::net::ws::accepts_deflate;
using herald::net::ws::check_upgrade;
using herald::net::ws::encode_upgrade_response;
using herald::net::ws::offers_subprotocol;

TEST_CASE("check_upgrade: version 13 and a 16-byte base64 key", "[ws][upgrade][bad-input]") {
  std::string detail;
  // No Host (RFC 6455 section 4.1 item 3): refused, as Beast's handshake did.
  CHECK(check_upgrade("", "13", "dGhlIHNhbXBsZSBub25jZQ==", detail) == errc::invalid_request);
  CHECK(detail.find("Host") != std::string::npos);
  CHECK(check_upgrade("  ", "13", "dGhlIHNhbXBsZSBub25jZQ==", detail) == errc::invalid_request);
  CHECK(check_upgrade("h", "13", "dGhlIHNhbXBsZSBub25jZQ==", detail) == errc::none);
  CHECK(check_upgrade("h", " 13 ", "dGhlIHNhbXBsZSBub25jZQ==", detail) == errc::none);
  for (const char* v : {"", "8", "12", "13, 8", "130", "1 3"}) {
    CAPTURE(v);
    detail.clear();
    CHECK(check_upgrade("h", v, "dGhlIHNhbXBsZSBub25jZQ==", detail) == errc::upgrade_required);
    CHECK_FALSE(detail.empty());
  }
  for (const char* k : {"", "abc", "dGhlIHNhbXBsZSBub25jZQ=", "dGhlIHNhbXBsZSBub25jZQ==x",
                        "dGhlIHNhbXBsZSBub25jZ!==", "dGhlIHNhbXBsZSBub25jZQAA"}) {
    CAPTURE(k);
    detail.clear();
    CHECK(check_upgrade("h", "13", k, detail) == errc::invalid_request);
    CHECK_FALSE(detail.empty());
  }
}

TEST_CASE("offers_subprotocol: tokens of a comma-separated list", "[ws][upgrade]") {
  CHECK(offers_subprotocol("centrifuge-protobuf", "centrifuge-protobuf"));
  CHECK(offers_subprotocol("a, centrifuge-protobuf ,b", "centrifuge-protobuf"));
  CHECK(offers_subprotocol("a,centrifuge-protobuf", "centrifuge-protobuf"));
  CHECK_FALSE(offers_subprotocol("", "centrifuge-protobuf"));
  CHECK_FALSE(offers_subprotocol("centrifuge-protobuf2", "centrifuge-protobuf"));
  CHECK_FALSE(offers_subprotocol("Centrifuge-Protobuf", "centrifuge-protobuf"));
  CHECK_FALSE(offers_subprotocol("centrifuge-json", "centrifuge-protobuf"));
}

TEST_CASE("encode_upgrade_response: the 101 of RFC 6455 section 4.2.2", "[ws][upgrade]") {
  CHECK(encode_upgrade_response("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "") ==
        "HTTP/1.1 101 Switching Protocols\r\n"
        "Upgrade: websocket\r\n"
        "Connection: Upgrade\r\n"
        "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
        "Server: herald\r\n"
        "\r\n");
  auto with = encode_upgrade_response("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "centrifuge-protobuf");
  CHECK(with.find("\r\nSec-WebSocket-Protocol: centrifuge-protobuf\r\n") != std::string::npos);
  CHECK(with.find("Sec-WebSocket-Extensions") == std::string::npos); // no extension in use
  CHECK(with.size() >= 4);
  CHECK(with.compare(with.size() - 4, 4, "\r\n\r\n") == 0);
}

TEST_CASE("accepts_deflate: RFC 7692 offers Herald accepts and declines", "[ws][upgrade][deflate]") {
  for (auto offer : {
         // What browsers and the `ws` package send.
         "permessage-deflate; client_max_window_bits", "permessage-deflate",
         "x-webkit-deflate-frame, permessage-deflate",
         "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
         "permessage-deflate; client_max_window_bits=10; server_max_window_bits=15",
         "permessage-deflate;server_max_window_bits=\"15\"",
         // A declined offer falls back to the next one.
         "permessage-deflate; server_max_window_bits=10, permessage-deflate"}) {
    CAPTURE(offer);
    CHECK(accepts_deflate(offer));
  }
  // Declined (section 5.1): unknown, repeated or bad parameters; a smaller
  // server window than Herald's shared frames use.
  for (auto offer :
       {"", "deflate-frame", "permessage-deflate; foo", "permessage-deflate; server_max_window_bits=10",
        "permessage-deflate; server_max_window_bits", "permessage-deflate; client_max_window_bits=16",
        "permessage-deflate; client_max_window_bits=7", "permessage-deflate; client_max_window_bits=09",
        "permessage-deflate; client_max_window_bits=abc",
        "permessage-deflate; server_no_context_takeover=1",
        "permessage-deflate; client_no_context_takeover; client_no_context_takeover"}) {
    INFO(offer);
    CHECK_FALSE(accepts_deflate(offer));
  }
  auto answer = encode_upgrade_response("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "", true);
  CHECK(answer.find("\r\nSec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; "
                    "client_no_context_takeover\r\n") != std::string::npos);
}
