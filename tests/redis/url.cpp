#include "net/redis/url.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using herald::net::redis::parse_url;
using herald::net::redis::to_log_string;
using herald::net::redis::url;

namespace {

url parse_ok(const std::string& text) {
  url u;
  std::string error;
  INFO(text);
  REQUIRE(parse_url(text, u, error));
  CHECK(error.empty());
  return u;
}

std::string parse_error(const std::string& text) {
  url u;
  u.host = "unchanged";
  std::string error;
  INFO(text);
  CHECK_FALSE(parse_url(text, u, error));
  CHECK(u.host == "unchanged");
  CHECK(error.rfind("invalid Redis URL: ", 0) == 0);
  return error;
}

// A URL and where it points.
struct address {
  std::string text;
  std::string host;
  unsigned port;
  int db;
};

// Parses each URL and checks its host, port and database.
void check_address(const std::vector<address>& table) {
  for (const auto& a : table) {
    auto u = parse_ok(a.text);
    INFO(a.text);
    CHECK(u.host == a.host);
    CHECK(u.port == a.port);
    CHECK(u.db == a.db);
  }
}

} // namespace

TEST_CASE("url: host only gives port 6379 and db 0", "[redis][url]") {
  auto u = parse_ok("redis://localhost");
  CHECK(u.password.empty());
  CHECK(u.username.empty());
  check_address({{"redis://localhost", "localhost", 6379, 0},
                 {"redis://localhost/", "localhost", 6379, 0},
                 {"REDIS://redis.internal", "redis.internal", 6379, 0}});
}

TEST_CASE("url: host, port and db", "[redis][url]") {
  check_address({{"redis://127.0.0.1:6380/3", "127.0.0.1", 6380, 3},
                 {"redis://h:1", "h", 1, 0},
                 {"redis://h:65535/15", "h", 65535, 15},
                 {"redis://my_redis-1.svc:7000", "my_redis-1.svc", 7000, 0}});
}

TEST_CASE("url: password forms", "[redis][url]") {
  auto u = parse_ok("redis://:s3cret@10.0.0.5:6379/2");
  CHECK(u.username.empty());
  CHECK(u.password == "s3cret");
  CHECK(u.host == "10.0.0.5");
  CHECK(u.db == 2);

  u = parse_ok("redis://alice:pw@host:1234/0");
  CHECK(u.username == "alice");
  CHECK(u.password == "pw");
  CHECK(u.port == 1234);

  SECTION("percent-encoded password") {
    u = parse_ok("redis://:p%40ss%3Aw%2Frd%25@host");
    CHECK(u.password == "p@ss:w/rd%");
  }
  SECTION("raw '@' and ':' in the password") {
    u = parse_ok("redis://:a@b:c@host:7");
    CHECK(u.password == "a@b:c");
    CHECK(u.host == "host");
    CHECK(u.port == 7);
  }
}

TEST_CASE("url: IPv6 literals", "[redis][url]") {
  check_address(
    {{"redis://[::1]:6390/1", "::1", 6390, 1}, {"redis://[fe80::1:2]", "fe80::1:2", 6379, 0}});
}

TEST_CASE("url: rejected inputs", "[redis][url]") {
  CHECK_THAT(parse_error(""), Catch::Contains("expected redis://"));
  CHECK_THAT(parse_error("localhost:6379"), Catch::Contains("expected redis://"));
  CHECK_THAT(parse_error("http://localhost"), Catch::Contains("scheme"));
  CHECK_THAT(parse_error("rediss://localhost"), Catch::Contains("TLS"));
  CHECK_THAT(parse_error("redis://"), Catch::Contains("empty host"));
  CHECK_THAT(parse_error("redis://:6379"), Catch::Contains("empty host"));
  CHECK_THAT(parse_error("redis://host:"), Catch::Contains("empty port"));
  CHECK_THAT(parse_error("redis://host:0"), Catch::Contains("port"));
  CHECK_THAT(parse_error("redis://host:65536"), Catch::Contains("port"));
  CHECK_THAT(parse_error("redis://host:-1"), Catch::Contains("port"));
  CHECK_THAT(parse_error("redis://host:12ab"), Catch::Contains("port"));
  CHECK_THAT(parse_error("redis://host:99999999999999999999"), Catch::Contains("port"));
  CHECK_THAT(parse_error("redis://host/x"), Catch::Contains("database"));
  CHECK_THAT(parse_error("redis://host/-1"), Catch::Contains("database"));
  CHECK_THAT(parse_error("redis://host/1/2"), Catch::Contains("database"));
  CHECK_THAT(parse_error("redis://host/99999999999"), Catch::Contains("database"));
  CHECK_THAT(parse_error("redis://host?db=1"), Catch::Contains("query"));
  CHECK_THAT(parse_error("redis://host#x"), Catch::Contains("query"));
  CHECK_THAT(parse_error("redis://pw@host"), Catch::Contains("':password'"));
  CHECK_THAT(parse_error("redis://:@host"), Catch::Contains("empty password"));
  CHECK_THAT(parse_error("redis://:p%4@host"), Catch::Contains("percent-escape"));
  CHECK_THAT(parse_error("redis://:p%zz@host"), Catch::Contains("percent-escape"));
  CHECK_THAT(parse_error("redis://::1:6379"), Catch::Contains("IPv6"));
  CHECK_THAT(parse_error("redis://[::1"), Catch::Contains("']'"));
  CHECK_THAT(parse_error("redis://[]:1"), Catch::Contains("IPv6"));
  CHECK_THAT(parse_error("redis://[host]:1"), Catch::Contains("IPv6"));
  CHECK_THAT(parse_error("redis://[::1]x"), Catch::Contains("':port'"));
  CHECK_THAT(parse_error("redis://ho st"), Catch::Contains("percent-encoded"));
  CHECK_THAT(parse_error("redis://h\xc3\xa9"), Catch::Contains("percent-encoded"));
  CHECK_THAT(parse_error("redis://ho$t"), Catch::Contains("host name"));
  CHECK_THAT(parse_error("redis://" + std::string(254, 'a')), Catch::Contains("253"));
}

TEST_CASE("url: errors never echo the password", "[redis][url]") {
  url u;
  std::string error;
  CHECK_FALSE(parse_url("redis://:topsecret@host:bad", u, error));
  CHECK(error.find("topsecret") == std::string::npos);
}

TEST_CASE("url: log form hides the password", "[redis][url]") {
  CHECK(to_log_string(parse_ok("redis://:pw@h:1/2")) == "redis://:***@h:1/2");
  CHECK(to_log_string(parse_ok("redis://u:pw@h")) == "redis://u:***@h:6379");
  CHECK(to_log_string(parse_ok("redis://[::1]:5")) == "redis://[::1]:5");
}

// -- redis+cluster:// ---------------------------------------------------------

TEST_CASE("url: a Redis Cluster is a list of seeds sharing one login", "[redis][url][cluster]") {
  using herald::net::redis::cluster_url;
  using herald::net::redis::is_cluster_url;
  using herald::net::redis::parse_cluster_url;
  cluster_url c;
  std::string error;
  REQUIRE(parse_cluster_url("redis+cluster://h1:7000,10.0.0.2:7001,[::1]:7002,h4", c, error));
  REQUIRE(c.seeds.size() == 4);
  CHECK(c.seeds[0].host == "h1");
  CHECK(c.seeds[0].port == 7000);
  CHECK(c.seeds[1].host == "10.0.0.2");
  CHECK(c.seeds[2].host == "::1");
  CHECK(c.seeds[2].port == 7002);
  CHECK(c.seeds[3].port == 6379);
  CHECK(to_log_string(c) == "redis+cluster://h1:7000,10.0.0.2:7001,[::1]:7002,h4:6379");

  REQUIRE(parse_cluster_url("REDIS+CLUSTER://u:p%40ss@a:1,b:2/0", c, error));
  REQUIRE(c.seeds.size() == 2);
  for (auto& s : c.seeds) {
    CHECK(s.username == "u");
    CHECK(s.password == "p@ss");
    CHECK(s.db == 0);
  }
  CHECK(to_log_string(c) == "redis+cluster://u:***@a:1,b:2");
  CHECK(parse_cluster_url("redis+cluster://one:1/", c, error));
  CHECK(c.seeds.size() == 1);

  CHECK(is_cluster_url("Redis+Cluster://x"));
  CHECK_FALSE(is_cluster_url("redis://x"));
  CHECK_FALSE(is_cluster_url("redis+cluster:/x"));
}

TEST_CASE("url: bad cluster URLs name the seed and the reason",
          "[redis][url][cluster][bad-input]") {
  using herald::net::redis::cluster_url;
  using herald::net::redis::parse_cluster_url;
  auto bad = [](const std::string& text) {
    cluster_url c;
    c.seeds.resize(7);
    std::string error;
    INFO(text);
    CHECK_FALSE(parse_cluster_url(text, c, error));
    CHECK(c.seeds.size() == 7); // unchanged
    CHECK(error.rfind("invalid Redis URL: ", 0) == 0);
    return error;
  };
  CHECK(bad("redis://h:1").find("redis+cluster://") != std::string::npos);
  CHECK(bad("redis+cluster://").find("no seed") != std::string::npos);
  CHECK(bad("redis+cluster://a:1,,b:2").find("seed 2 is empty") != std::string::npos);
  CHECK(bad("redis+cluster://a:1,").find("seed 2 is empty") != std::string::npos);
  CHECK(bad("redis+cluster://a:1,b:99999").find("seed 2: the port") != std::string::npos);
  CHECK(bad("redis+cluster://a:1,b c:2").find("non-ASCII") != std::string::npos);
  CHECK(bad("redis+cluster://a:1/3").find("database 0 only") != std::string::npos);
  CHECK(bad("redis+cluster://a:1?x=1").find("query") != std::string::npos);
  auto e = bad("redis+cluster://:s3cret@a:1,:2");
  CHECK(e.find("seed 2") != std::string::npos);
  CHECK(e.find("s3cret") == std::string::npos);
}
