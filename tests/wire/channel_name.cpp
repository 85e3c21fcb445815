#include "net/wire/channel_name.hpp"

#include <catch2/catch.hpp>

#include "net/wire/errors.hpp"
#include "net/wire/strkey.hpp"

#include <array>
#include <initializer_list>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

using herald::net::channel_fault;
using herald::net::check_channel;
using herald::net::channel_kind;
using herald::net::kind_of;
using herald::net::validate_channel;

namespace {

const std::string account = "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ";

bool is_invalid_channel(std::string_view name) {
  auto ec = validate_channel(name);
  return ec == herald::errc::invalid_channel &&
         ec == herald::make_error_code(herald::errc::invalid_channel);
}

} // namespace

TEST_CASE("valid stream channels", "[channel]") {
  for (std::string_view name : {"stream:1001", "stream:a", "stream:0", "stream:_", "stream:.",
                                "stream:-", "stream:ABC-xyz_0.9", "stream:..", "stream:1001.v2"}) {
    INFO(name);
    CHECK_FALSE(validate_channel(name));
    CHECK(kind_of(name) == channel_kind::stream);
  }
}

TEST_CASE("stream id of exactly 128 characters is valid", "[channel]") {
  std::string name = "stream:" + std::string(128, 'x');
  CHECK_FALSE(validate_channel(name));
  CHECK(kind_of(name) == channel_kind::stream);
}

TEST_CASE("valid user channels", "[channel]") {
  SECTION("SEP-23 example account") {
    std::string name = "user:" + account;
    CHECK_FALSE(validate_channel(name));
    CHECK(kind_of(name) == channel_kind::user);
  }
  SECTION("generated accounts") {
    std::array<std::uint8_t, 32> key{};
    for (int i = 0; i < 16; ++i) {
      key.fill(static_cast<std::uint8_t>(i * 17));
      key[0] = static_cast<std::uint8_t>(i);
      std::string name = "user:" + herald::net::encode_account_id(key);
      INFO(name);
      CHECK_FALSE(validate_channel(name));
      CHECK(kind_of(name) == channel_kind::user);
    }
  }
}

TEST_CASE("the error is herald::errc::invalid_channel", "[channel][bad-input]") {
  auto ec = validate_channel("nope");
  REQUIRE(ec);
  CHECK(ec.category() == herald::herald_category());
  CHECK(ec.value() == static_cast<int>(herald::errc::invalid_channel));
  CHECK(ec == herald::errc::invalid_channel);
}

TEST_CASE("empty name is invalid", "[channel][bad-input]") {
  CHECK(is_invalid_channel(""));
}

TEST_CASE("prefix alone is invalid", "[channel][bad-input]") {
  SECTION("stream: with empty id") {
    CHECK(is_invalid_channel("stream:"));
  }
  SECTION("user: with empty key") {
    CHECK(is_invalid_channel("user:"));
  }
  SECTION("no colon") {
    CHECK(is_invalid_channel("stream"));
    CHECK(is_invalid_channel("user"));
    CHECK(is_invalid_channel("stream1001"));
  }
}

TEST_CASE("other prefixes are invalid", "[channel][bad-input]") {
  for (std::string_view name :
       {"topic:1001", "streams:1001", "strea:1001",
        "users:"
        "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ",
        ":1001", "1001", "account:GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ",
        "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ", "stream;1001", "stream=1001",
        "user:stream:1001"}) {
    INFO(name);
    CHECK(is_invalid_channel(name));
  }
}

TEST_CASE("uppercase or mixed-case prefixes are invalid", "[channel][bad-input]") {
  SECTION("stream") {
    CHECK(is_invalid_channel("Stream:1001"));
    CHECK(is_invalid_channel("STREAM:1001"));
    CHECK(is_invalid_channel("sTream:1001"));
  }
  SECTION("user") {
    CHECK(is_invalid_channel("User:" + account));
    CHECK(is_invalid_channel("USER:" + account));
  }
}

TEST_CASE("spaces are invalid", "[channel][bad-input]") {
  for (const std::string& name :
       std::initializer_list<std::string>{"stream:10 01", " stream:1001", "stream:1001 ",
                                          "stream: 1001", "stream :1001", "stream:\t1001",
                                          "user: " + account, "user:" + account + " "}) {
    CAPTURE(name);
    CHECK(is_invalid_channel(name));
  }
}

TEST_CASE("NUL bytes are invalid", "[channel][bad-input]") {
  using namespace std::string_view_literals;
  CHECK(is_invalid_channel("stream:10\0"
                           "01"sv));
  CHECK(is_invalid_channel("stream:1001\0"sv));
  CHECK(is_invalid_channel("\0stream:1001"sv));
  CHECK(is_invalid_channel("stream:\0"sv));
  CHECK(is_invalid_channel(std::string("user:" + account) + '\0'));
}

TEST_CASE("non-ASCII bytes are invalid", "[channel][bad-input]") {
  CHECK(is_invalid_channel("stream:caf\xC3\xA9")); // UTF-8 e-acute
  CHECK(is_invalid_channel("stream:\xE2\x80\x8B"
                           "1001")); // zero-width space
  CHECK(is_invalid_channel("stream:\xFF"));
  CHECK(is_invalid_channel("stream:\x80"));
  CHECK(is_invalid_channel("\xEF\xBB\xBFstream:1001")); // UTF-8 BOM before prefix
}

TEST_CASE("CR and LF are invalid", "[channel][bad-input]") {
  CHECK(is_invalid_channel("stream:1001\r\n"));
  CHECK(is_invalid_channel("stream:1001\n"));
  CHECK(is_invalid_channel("stream:1001\r"));
  CHECK(is_invalid_channel("stream:10\r\nevent: x"));
  CHECK(is_invalid_channel("user:" + account + "\r\n"));
}

TEST_CASE("stream id of 129 characters is invalid", "[channel][bad-input]") {
  CHECK(is_invalid_channel("stream:" + std::string(129, 'x')));
  CHECK(is_invalid_channel("stream:" + std::string(1000, 'x')));
}

TEST_CASE("only [A-Za-z0-9_.-] is allowed in a stream id", "[channel][bad-input]") {
  auto allowed = [](int b) {
    return (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || (b >= '0' && b <= '9') || b == '_' ||
           b == '.' || b == '-';
  };
  for (int b = 0; b < 256; ++b) {
    std::string name = "stream:a";
    name += static_cast<char>(b);
    name += 'z';
    INFO("byte " << b);
    if (allowed(b)) {
      CHECK_FALSE(validate_channel(name));
    } else {
      CHECK(is_invalid_channel(name));
    }
  }
  SECTION("common punctuation") {
    for (std::string_view name :
         {"stream:a/b", "stream:a:b", "stream:a*", "stream:#", "stream:a?b", "stream:a%20b",
          "stream:a+b", "stream:a,b", "stream:a=b", "stream:~a", "stream:a@b", "stream:\"a\""}) {
      INFO(name);
      CHECK(is_invalid_channel(name));
    }
  }
}

TEST_CASE("user: with an invalid account id is invalid", "[channel][bad-input]") {
  SECTION("wrong checksum") {
    std::string key = account;
    key[20] = key[20] == 'A' ? 'B' : 'A';
    CHECK(is_invalid_channel("user:" + key));
  }
  SECTION("55 and 57 characters") {
    CHECK(is_invalid_channel("user:" + account.substr(0, 55)));
    CHECK(is_invalid_channel("user:" + account + "A"));
  }
  SECTION("lowercase key") {
    std::string key = account;
    for (auto& c : key) {
      if (c >= 'A' && c <= 'Z')
        c = static_cast<char>(c - 'A' + 'a');
    }
    CHECK(is_invalid_channel("user:" + key));
  }
  SECTION("secret seed") {
    CHECK(is_invalid_channel("user:SBGWKM3CD4IL47QN6X54N6Y33T3JDNVI6AIJ6CD5IM47HG3IG4O36XCU"));
  }
  SECTION("muxed account") {
    CHECK(is_invalid_channel(
      "user:MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUAAAAAAAAAAAACJUQ"));
  }
  SECTION("contract address") {
    CHECK(is_invalid_channel("user:CA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUWDA"));
  }
  SECTION("not a key at all") {
    CHECK(is_invalid_channel("user:alice"));
    CHECK(is_invalid_channel("user:1001"));
  }
  SECTION("two user: prefixes") {
    CHECK(is_invalid_channel("user:user:" + account));
  }
}

TEST_CASE("check_channel says which rule a name breaks (issue 39)", "[channel][bad-input]") {
  // Was: one invalid_channel for every fault.
  CHECK(check_channel("stream:1") == channel_fault::none);
  CHECK(check_channel("user:" + account) == channel_fault::none);
  CHECK(check_channel("") == channel_fault::prefix);
  CHECK(check_channel("Stream:1") == channel_fault::prefix);
  CHECK(check_channel("stream:") == channel_fault::stream_id_length);
  CHECK(check_channel("stream:" + std::string(129, 'x')) == channel_fault::stream_id_length);
  CHECK(check_channel("stream:a b") == channel_fault::stream_id_char);
  CHECK(check_channel("user:GA7Q") == channel_fault::account_length);
  std::string lower = account;
  lower[10] = 'q';
  CHECK(check_channel("user:" + lower) == channel_fault::account_case);
  // A muxed account (SEP-23 example).
  CHECK(check_channel("user:MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUAAAAAAAAAAAACJUQ") ==
        channel_fault::account_muxed);
  std::string typo = account;
  typo[20] = typo[20] == 'A' ? 'B' : 'A';
  CHECK(check_channel("user:" + typo) == channel_fault::account_checksum);
  std::string bad = account;
  bad[5] = '1';
  CHECK(check_channel("user:" + bad) == channel_fault::account_alphabet);
  // A secret seed has the StrKey shape with another version byte.
  std::string seed = account;
  seed[0] = 'S';
  CHECK(check_channel("user:" + seed) == channel_fault::account_version);
  CHECK(herald::net::channel_error_detail("stream:", channel_fault::stream_id_length, "x: ") ==
        R"(x: invalid channel "stream:": the id after "stream:" must be 1-128 characters)");
  CHECK(herald::net::describe(channel_fault::account_checksum).find("checksum") !=
        std::string_view::npos);
}
