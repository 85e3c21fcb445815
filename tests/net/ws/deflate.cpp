// permessage-deflate's compression on zlib (net/ws/deflate.hpp): round
// trips, the bound on inflated size (a deflate bomb), corrupt input. The
// same against real clients (`ws` with perMessageDeflate) is e2e.ws_framing.
#include "net/ws/deflate.hpp"

#include <catch2/catch.hpp>

#include <random>
#include <string>

using namespace herald::net::ws;

TEST_CASE("deflate: messages round-trip, compressed without the sync-flush tail", "[ws][deflate]") {
  std::mt19937 rng{7};
  std::string json = R"({"balances":[)";
  for (int i = 0; i < 60; ++i)
    json += R"({"asset":"USDC","issuer":"GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN","amount":")" +
            std::to_string(rng() % 100000) + "\"},";
  json += "{}]}";
  for (const std::string& text : {std::string{}, std::string{"x"}, json, std::string(100000, 'a')}) {
    auto c = deflate_message(text);
    CHECK((c.size() < 4 || c.substr(c.size() - 4) != std::string("\x00\x00\xff\xff", 4)));
    std::string out;
    REQUIRE(inflate_message(c, text.size() + 1, out) == inflate_status::ok);
    CHECK(out == text);
  }
  CHECK(deflate_message(json).size() < json.size() / 3);
  // Twice the same bytes: no context is carried from one message to the next.
  CHECK(deflate_message(json) == deflate_message(json));
}

TEST_CASE("deflate: inflating stops at the bound (a deflate bomb) and refuses corrupt bytes",
          "[ws][deflate][bad-input]") {
  const auto bomb = deflate_message(std::string(10 * 1024 * 1024, '\0')); // ~10 KiB
  CHECK(bomb.size() < 20000);
  std::string out;
  CHECK(inflate_message(bomb, 65536, out) == inflate_status::too_big);
  CHECK(out.size() <= 65536);
  // Exactly at the bound is fine.
  const auto exact = deflate_message(std::string(65536, 'z'));
  CHECK(inflate_message(exact, 65536, out) == inflate_status::ok);
  CHECK(out.size() == 65536);
  CHECK(inflate_message(exact, 65535, out) == inflate_status::too_big);
  // Not DEFLATE: a reserved block type (BTYPE 11), and random bytes.
  CHECK(inflate_message(std::string("\x07\xff\xff", 3), 1000, out) == inflate_status::corrupt);
  // A final block followed by more bytes.
  auto fin = deflate_message("abc");
  std::string final_block = std::string("\x4b\x4c\x4a\x06\x00", 5) + "junk"; // "abc", BFINAL, then junk
  CHECK(inflate_message(final_block, 1000, out) == inflate_status::corrupt);
  CHECK(inflate_message(fin, 1000, out) == inflate_status::ok);
  CHECK(out == "abc");
}
