// The opening-handshake checks made before Beast (net/wire/ws/upgrade.hpp); the
// same requests against the real server are in e2e.ws_framing.
#include "net/wire/ws/upgrade.hpp"

#include <catch2/catch.hpp>

using herald::errc;
using herald::net::ws::check_upgrade;
using herald::net::ws::offers_subprotocol;

TEST_CASE("check_upgrade: version 13 and a 16-byte base64 key", "[ws][upgrade][bad-input]") {
  std::string detail;
  CHECK(check_upgrade("13", "dGhlIHNhbXBsZSBub25jZQ==", detail) == errc::none);
  CHECK(check_upgrade(" 13 ", "dGhlIHNhbXBsZSBub25jZQ==", detail) == errc::none);
  for (const char* v : {"", "8", "12", "13, 8", "130", "1 3"}) {
    CAPTURE(v);
    detail.clear();
    CHECK(check_upgrade(v, "dGhlIHNhbXBsZSBub25jZQ==", detail) == errc::upgrade_required);
    CHECK_FALSE(detail.empty());
  }
  for (const char* k : {"", "abc", "dGhlIHNhbXBsZSBub25jZQ=", "dGhlIHNhbXBsZSBub25jZQ==x",
                        "dGhlIHNhbXBsZSBub25jZ!==", "dGhlIHNhbXBsZSBub25jZQAA"}) {
    CAPTURE(k);
    detail.clear();
    CHECK(check_upgrade("13", k, detail) == errc::invalid_request);
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
