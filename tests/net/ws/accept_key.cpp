// accept_key: the opening handshake's accept hash (RFC 6455 section 4.2.2).
#include "net/ws/accept_key.hpp"

#include <catch2/catch.hpp>

using herald::net::ws::accept_key;

TEST_CASE("accept_key: the example of RFC 6455 section 1.3", "[ws][upgrade]") {
  CHECK(accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST_CASE("accept_key: 28 base64 characters for any key", "[ws][upgrade]") {
  for (const std::string& key : {std::string{}, std::string{"AQIDBAUGBwgJCgsMDQ4PEA=="},
                                 std::string(300, 'x')}) {
    auto a = accept_key(key);
    CHECK(a.size() == 28u);
    CHECK(a.back() == '=');
    CHECK(a.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") ==
          std::string::npos);
  }
  CHECK(accept_key("AQIDBAUGBwgJCgsMDQ4PEA==") != accept_key("AQIDBAUGBwgJCgsMDQ4PEQ=="));
}
