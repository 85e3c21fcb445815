#include "net/wire/strkey.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

using herald::net::crc16_xmodem;
using herald::net::encode_account_id;
using herald::net::is_account_id;

namespace {

using key32 = std::array<std::uint8_t, 32>;

// SEP-23 "Valid test cases": the non-multiplexed account and its raw key.
constexpr std::string_view sep23_account =
  "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ";
constexpr key32 sep23_key{0x3f, 0x0c, 0x34, 0xbf, 0x93, 0xad, 0x0d, 0x99, 0x71, 0xd0, 0x4c,
                          0xcc, 0x90, 0xf7, 0x05, 0x51, 0x1c, 0x83, 0x8a, 0xad, 0x97, 0x34,
                          0xa4, 0xa2, 0xfb, 0x0d, 0x7a, 0x03, 0xfc, 0x7f, 0xe8, 0x9a};

key32 from_hex(std::string_view hex) {
  REQUIRE(hex.size() == 64);
  auto nibble = [](char c) -> std::uint8_t {
    if (c >= '0' && c <= '9')
      return static_cast<std::uint8_t>(c - '0');
    return static_cast<std::uint8_t>(c - 'a' + 10);
  };
  key32 k{};
  for (std::size_t i = 0; i < 32; ++i) {
    k[i] = static_cast<std::uint8_t>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  }
  return k;
}

// A test-local base32 (RFC 4648, no padding) encoder, independent of the one
// under test, to build StrKeys with any version byte and a *valid* checksum,
// so that only the version byte makes them wrong.
std::string strkey_with_version(std::uint8_t version, const key32& key) {
  std::vector<std::uint8_t> raw{version};
  raw.insert(raw.end(), key.begin(), key.end());
  std::uint16_t crc = crc16_xmodem(raw.data(), raw.size());
  raw.push_back(static_cast<std::uint8_t>(crc & 0xFF));
  raw.push_back(static_cast<std::uint8_t>(crc >> 8));
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  std::string out;
  std::size_t bit = 0;
  while (bit < raw.size() * 8) {
    unsigned v = 0;
    for (int j = 0; j < 5; ++j, ++bit) {
      unsigned b = bit < raw.size() * 8 ? (raw[bit / 8] >> (7 - bit % 8)) & 1u : 0u;
      v = (v << 1) | b;
    }
    out.push_back(alphabet[v]);
  }
  return out;
}

// Deterministic keys for round-trip tests (xorshift32).
std::vector<key32> pseudo_random_keys(std::size_t n) {
  std::uint32_t s = 0x9E3779B9u;
  std::vector<key32> keys(n);
  for (auto& k : keys) {
    for (auto& b : k) {
      s ^= s << 13;
      s ^= s >> 17;
      s ^= s << 5;
      b = static_cast<std::uint8_t>(s >> 24);
    }
  }
  return keys;
}

const std::string valid(sep23_account);

} // namespace

TEST_CASE("crc16_xmodem matches the standard check value", "[strkey]") {
  const std::string_view check = "123456789";
  CHECK(crc16_xmodem(reinterpret_cast<const std::uint8_t*>(check.data()), check.size()) == 0x31C3);
  CHECK(crc16_xmodem(nullptr, 0) == 0);
  const std::uint8_t one[] = {0x01};
  CHECK(crc16_xmodem(one, 1) == 0x1021);
}

TEST_CASE("SEP-23 valid account test vector", "[strkey]") {
  CHECK(is_account_id(sep23_account));
  CHECK(encode_account_id(sep23_key) == sep23_account);
}

TEST_CASE("encode_account_id matches published key/address pairs", "[strkey]") {
  // Pairs from a third-party Stellar address test-vector set (addr_type 48).
  struct pair {
    std::string_view hex, address;
  };
  const pair pairs[] = {
    {"7b07983499c93f4eb256d7f6a42acf13ef098b20022e904f6c82f13805166c9f",
     "GB5QPGBUTHET6TVSK3L7NJBKZ4J66CMLEABC5ECPNSBPCOAFCZWJ6KSN"},
    {"40de01bb8215216a18f08ea068a1c2adaf41d11b7c5558de355c8c3a7f6841ed",
     "GBAN4AN3QIKSC2QY6CHKA2FBYKW26QORDN6FKWG6GVOIYOT7NBA633GO"},
    {"faa34f613bfce260627acd14cd173e58cd3af0fb081375000602abcf7b065397",
     "GD5KGT3BHP6OEYDCPLGRJTIXHZMM2OXQ7MEBG5IAAYBKXT33AZJZOOKJ"},
    {"027996479ec25f1705393b17badb24afbd45601aad6d926348d42a7ff29093c3",
     "GABHTFSHT3BF6FYFHE5RPOW3ESX32RLADKWW3ETDJDKCU77SSCJ4HQ74"},
  };
  for (const auto& p : pairs) {
    INFO(p.address);
    CHECK(encode_account_id(from_hex(p.hex)) == p.address);
    CHECK(is_account_id(p.address));
  }
}

TEST_CASE("encode_account_id output is always a valid account id", "[strkey]") {
  SECTION("all-zero key") {
    auto s = encode_account_id(key32{});
    CHECK(s.size() == 56);
    CHECK(s.front() == 'G');
    CHECK(is_account_id(s));
  }
  SECTION("all-0xFF key") {
    key32 k;
    k.fill(0xFF);
    auto s = encode_account_id(k);
    CHECK(s.front() == 'G');
    CHECK(is_account_id(s));
  }
  SECTION("pseudo-random keys; distinct keys give distinct addresses") {
    std::string previous;
    for (const auto& k : pseudo_random_keys(200)) {
      auto s = encode_account_id(k);
      INFO(s);
      CHECK(s.size() == 56);
      CHECK(s.front() == 'G');
      CHECK(is_account_id(s));
      CHECK(s == strkey_with_version(48, k)); // independent encoder agrees
      CHECK(s != previous);
      previous = s;
    }
  }
}

TEST_CASE("empty string is not an account id", "[strkey][bad-input]") {
  CHECK_FALSE(is_account_id(""));
  CHECK_FALSE(is_account_id(std::string_view{}));
}

TEST_CASE("wrong checksum is rejected", "[strkey][bad-input]") {
  SECTION("flip a key character") {
    std::string s = valid;
    s[20] = s[20] == 'A' ? 'B' : 'A';
    INFO(s);
    CHECK_FALSE(is_account_id(s));
  }
  SECTION("flip the last (checksum) character") {
    std::string s = valid;
    s.back() = s.back() == 'Z' ? 'Y' : 'Z';
    INFO(s);
    CHECK_FALSE(is_account_id(s));
  }
  SECTION("swap two adjacent characters") {
    std::string s = valid;
    std::swap(s[10], s[11]);
    REQUIRE(s != valid);
    INFO(s);
    CHECK_FALSE(is_account_id(s));
  }
  SECTION("every single-character substitution is detected") {
    const std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    int accepted = 0;
    for (std::size_t i = 0; i < valid.size(); ++i) {
      for (char c : alphabet) {
        if (c == valid[i])
          continue;
        std::string s = valid;
        s[i] = c;
        if (is_account_id(s)) {
          ++accepted;
          UNSCOPED_INFO("accepted: " << s);
        }
      }
    }
    CHECK(accepted == 0);
  }
}

TEST_CASE("wrong length is rejected", "[strkey][bad-input]") {
  SECTION("55 characters") {
    CHECK_FALSE(is_account_id(valid.substr(0, 55)));
  }
  SECTION("57 characters (SEP-23: length congruent to 1 mod 8)") {
    CHECK_FALSE(is_account_id(valid + "A"));
    CHECK_FALSE(is_account_id("GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZA"));
  }
  SECTION("58 characters decoding to 36 bytes (SEP-23)") {
    CHECK_FALSE(is_account_id("GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUACUSI"));
  }
  SECTION("5-byte key (SEP-23)") {
    CHECK_FALSE(is_account_id("GAAAAAAAACGC6"));
  }
  SECTION("a single character") {
    CHECK_FALSE(is_account_id("G"));
  }
}

TEST_CASE("lowercase is rejected", "[strkey][bad-input]") {
  SECTION("all lowercase") {
    std::string s = valid;
    for (auto& c : s) {
      if (c >= 'A' && c <= 'Z')
        c = static_cast<char>(c - 'A' + 'a');
    }
    INFO(s);
    CHECK_FALSE(is_account_id(s));
  }
  SECTION("one lowercase letter") {
    std::string s = valid;
    s[5] = static_cast<char>(s[5] - 'A' + 'a'); // 'F' -> 'f'
    INFO(s);
    CHECK_FALSE(is_account_id(s));
  }
}

TEST_CASE("secret seed ('S...') is rejected", "[strkey][bad-input]") {
  // Version byte 18 << 3 with a correct checksum: only the version is wrong.
  auto seed = strkey_with_version(18 << 3, sep23_key);
  INFO(seed);
  REQUIRE(seed.size() == 56);
  REQUIRE(seed.front() == 'S');
  CHECK_FALSE(is_account_id(seed));
}

TEST_CASE("muxed account ('M...') is rejected", "[strkey][bad-input]") {
  SECTION("SEP-23 valid muxed account (69 characters)") {
    CHECK_FALSE(
      is_account_id("MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUAAAAAAAAAAAACJUQ"));
  }
  SECTION("56 characters with the muxed version byte and a valid checksum") {
    auto m = strkey_with_version(12 << 3, sep23_key);
    INFO(m);
    REQUIRE(m.front() == 'M');
    CHECK_FALSE(is_account_id(m));
  }
}

TEST_CASE("other StrKey types and versions are rejected", "[strkey][bad-input]") {
  SECTION("contract 'C...' (SEP-23 valid contract)") {
    CHECK_FALSE(is_account_id("CA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUWDA"));
  }
  SECTION("pre-auth tx 'T...' and hash-x 'X...' with valid checksums") {
    CHECK_FALSE(is_account_id(strkey_with_version(19 << 3, sep23_key)));
    CHECK_FALSE(is_account_id(strkey_with_version(23 << 3, sep23_key)));
  }
  SECTION("'G' with non-zero algorithm bits (SEP-23 invalid algorithm)") {
    CHECK_FALSE(is_account_id("G47QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVP2I"));
    CHECK_FALSE(is_account_id(strkey_with_version((6 << 3) | 7, sep23_key)));
    CHECK_FALSE(is_account_id(strkey_with_version((6 << 3) | 1, sep23_key)));
  }
}

TEST_CASE("characters outside A-Z2-7 are rejected", "[strkey][bad-input]") {
  for (char bad : {'0', '1', '8', '9'}) {
    SECTION(std::string("digit ") + bad) {
      std::string s = valid;
      s[30] = bad;
      INFO(s);
      CHECK_FALSE(is_account_id(s));
    }
  }
  SECTION("padding '='") {
    std::string s = valid;
    s.back() = '=';
    CHECK_FALSE(is_account_id(s));
    CHECK_FALSE(is_account_id(valid + "===="));
  }
  SECTION("space, tab, NUL, CR/LF") {
    for (char bad : {' ', '\t', '\0', '\r', '\n'}) {
      std::string s = valid;
      s[40] = bad;
      INFO(static_cast<int>(bad));
      CHECK_FALSE(is_account_id(s));
    }
    CHECK_FALSE(is_account_id(" " + valid.substr(0, 55)));
    CHECK_FALSE(is_account_id(valid + "\n"));
  }
  SECTION("non-ASCII bytes") {
    std::string s = valid;
    s[12] = '\xC3';
    CHECK_FALSE(is_account_id(s));
    s[12] = '\xFF';
    CHECK_FALSE(is_account_id(s));
  }
  SECTION("every byte outside the alphabet, at every position class") {
    const std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    for (int b = 0; b < 256; ++b) {
      char c = static_cast<char>(b);
      if (alphabet.find(c) != std::string_view::npos)
        continue;
      for (std::size_t pos : {std::size_t{0}, std::size_t{27}, std::size_t{55}}) {
        std::string s = valid;
        s[pos] = c;
        INFO("byte " << b << " at " << pos);
        CHECK_FALSE(is_account_id(s));
      }
    }
  }
}

TEST_CASE("all SEP-23 invalid test cases are rejected", "[strkey][bad-input]") {
  const char* const invalid[] = {
    "GAAAAAAAACGC6",
    "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUAAAAAAAAAAAACJUR",
    "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZA",
    "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUACUSI",
    "G47QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVP2I",
    "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVAAAAAAAAAAAAAJLKA",
    "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVAAAAAAAAAAAAAAV75I",
    "M47QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUAAAAAAAAAAAACJUQ",
    "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUAAAAAAAAAAAACJUK===",
    "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUAAAAAAAAAAAACJUO",
    "BAAD6DBUX6J22DMZOHIEZTEQ64CVCHEDRKWZONFEUL5Q26QD7R76RGR4TV",
    "BAAT6DBUX6J22DMZOHIEZTEQ64CVCHEDRKWZONFEUL5Q26QD7R76RGXACA",
  };
  for (const char* s : invalid) {
    INFO(s);
    CHECK_FALSE(is_account_id(s));
  }
}
