// Redis Cluster hash slots (net/redis/slot.hpp) against the specification's
// examples and against Redis's own CLUSTER KEYSLOT; Herald's Redis names
// (net/redis/envelope.hpp) share one slot per channel, so the publish and
// sync scripts run on a real one-node Redis Cluster, where the names without
// a hash tag are refused as CROSSSLOT.
#include "net/redis/slot.hpp"

#include <catch2/catch.hpp>

#include "net/redis/envelope.hpp"
#include "redis_server.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace herald::net::redis;
using namespace herald::test;

namespace {

// A cluster-enabled redis-server of its own (its nodes.conf in a temporary
// directory, removed at the end), optionally owning every slot: a one-node
// Redis Cluster that enforces slots like a bigger one.
struct one_node_cluster {
  std::filesystem::path dir;
  std::unique_ptr<redis_server> server;

  explicit one_node_cluster(bool own_all_slots) {
    char name[] = "/tmp/herald-slot-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    dir = name;
    // The bus port is given explicitly (Redis 7 `cluster-port`), so any
    // free port works, not only those below 55536.
    server = std::make_unique<redis_server>(std::vector<std::string>{
      "--cluster-enabled", "yes", "--cluster-config-file", (dir / "nodes.conf").string(),
      "--cluster-port", std::to_string(redis_server::free_port()), "--cluster-node-timeout",
      "1000"});
    if (!own_all_slots)
      return;
    REQUIRE(server->command({"CLUSTER", "ADDSLOTSRANGE", "0", "16383"}).str == "OK");
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (server->command({"CLUSTER", "INFO"}).str.find("cluster_state:ok") == std::string::npos) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::sleep_for(20ms);
    }
  }
  ~one_node_cluster() {
    server.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

} // namespace

TEST_CASE("slot: CRC16 is XMODEM, as the cluster specification's reference", "[redis][slot]") {
  // The specification's check value ("Appendix A: CRC16 reference").
  CHECK(crc16("123456789") == 0x31C3);
  CHECK(crc16("") == 0);
  CHECK(crc16(std::string_view("\0", 1)) == 0);
  CHECK(crc16("A") == 0x58E5);
}

TEST_CASE("slot: hash tags, first { and the first } after it, empty tag ignored", "[redis][slot]") {
  // The specification's examples ("Hash tags").
  CHECK(hash_tag("{user1000}.following") == "user1000");
  CHECK(hash_tag("foo{}{bar}") == "foo{}{bar}");
  CHECK(hash_tag("foo{{bar}}zap") == "{bar");
  CHECK(hash_tag("foo{bar}{zap}") == "bar");
  CHECK(hash_tag("no tag") == "no tag");
  CHECK(hash_tag("open{only") == "open{only");
  CHECK(hash_tag("close}only{") == "close}only{");
  CHECK(key_slot("{user1000}.following") == key_slot("{user1000}.followers"));
  CHECK(key_slot("foo") == 12182);
  CHECK(key_slot("bar") == 5061);
  CHECK(key_slot("123456789") == (0x31C3 & 16383));
}

TEST_CASE("slot: a channel's names share its slot, the idempotency key too", "[redis][slot]") {
  for (const char* channel : {"stream:42", "user:GABC", "stream:a.b-c_d"}) {
    channel_keys k = keys_for("herald:", channel);
    INFO(channel);
    CHECK(k.meta == std::string("herald:{") + channel + "}:meta");
    CHECK(k.history == std::string("herald:{") + channel + "}:history");
    CHECK(k.pubsub == std::string("herald:{") + channel + "}:pub");
    auto slot = key_slot(channel);
    CHECK(key_slot(k.meta) == slot);
    CHECK(key_slot(k.history) == slot);
    CHECK(key_slot(k.pubsub) == slot);
    // An idempotency key is the publisher's text: braces in it change nothing.
    CHECK(key_slot(idempotency_key_for("herald:", channel, "retry-{42}")) == slot);
    CHECK(idempotency_key_for("p:", channel, "k") == std::string("p:{") + channel + "}:idem:k");
  }
}

TEST_CASE("slot: the pub/sub name reads back to its channel, nothing else does", "[redis][slot]") {
  using herald::net::redis::channel_of_pubsub;
  CHECK(channel_of_pubsub("herald:", keys_for("herald:", "stream:42").pubsub) == "stream:42");
  CHECK(channel_of_pubsub("prod:", "prod:{user:G1}:pub") == "user:G1");
  CHECK(channel_of_pubsub("herald:", "herald:{}:pub").empty());
  CHECK(channel_of_pubsub("herald:", "herald:pub:stream:42").empty()); // the old name
  CHECK(channel_of_pubsub("herald:", "other:{stream:42}:pub").empty());
  CHECK(channel_of_pubsub("herald:", "herald:{stream:42}:meta").empty());
  CHECK(channel_of_pubsub("herald:", "herald:{a}b}:pub").empty());
  CHECK(channel_of_pubsub("herald:", "herald:{stream:42").empty());
}

TEST_CASE("slot: key_slot agrees with a real Redis's CLUSTER KEYSLOT", "[redis][slot]") {
  one_node_cluster cluster(false);
  // A key with a NUL and a non-UTF-8 byte in its tag; its length comes from
  // the literal itself (a hand-counted length read past it: ASan caught it).
  static constexpr char binary_key[] = "bin\0ary{\xff}";
  std::vector<std::string> keys = {"",
                                   "a",
                                   "foo",
                                   "123456789",
                                   "{}",
                                   "{a}",
                                   "foo{}{bar}",
                                   "foo{{bar}}zap",
                                   "foo{bar}{zap}",
                                   "x}y{z}",
                                   "{user1000}.following",
                                   std::string(binary_key, sizeof binary_key - 1)};
  for (const char* ch : {"stream:42", "user:GABC", "stream:x"}) {
    auto k = keys_for("herald:", ch);
    keys.insert(keys.end(), {k.meta, k.history, k.pubsub, idempotency_key_for("herald:", ch, "r")});
  }
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> len(0, 24), byte(0, 255), brace(0, 9);
  for (int i = 0; i < 300; ++i) {
    std::string k;
    for (int n = len(rng); n > 0; --n) {
      auto b = brace(rng);
      k.push_back(b == 0 ? '{' : b == 1 ? '}' : static_cast<char>(byte(rng)));
    }
    keys.push_back(std::move(k));
  }
  for (const auto& k : keys) {
    auto r = cluster.server->command({"CLUSTER", "KEYSLOT", k});
    INFO("key of " << k.size() << " bytes: " << k);
    REQUIRE(r.type == reply::integer);
    CHECK(key_slot(k) == r.number);
  }
}

TEST_CASE("slot: the publish and sync scripts run on a Redis Cluster, untagged names do not",
          "[redis][slot]") {
  one_node_cluster cluster(true);
  auto& redis = *cluster.server;
  auto k = keys_for("herald:", "stream:42");
  auto publish = [&](std::vector<std::string> keys, std::string pubsub) {
    std::vector<std::string> args{"EVAL", herald::net::redis::publish_script,
                                  std::to_string(keys.size())};
    args.insert(args.end(), keys.begin(), keys.end());
    args.insert(args.end(), {pubsub, "stream:42", "ev", "{\"n\":1}", "16", "60", "e1", "60"});
    return redis.command(args);
  };

  // What issue #11 reports: the old names are in different slots.
  auto old = publish({"herald:meta:stream:42", "herald:history:stream:42"}, "herald:pub:stream:42");
  CHECK(old.has_error_code("CROSSSLOT"));

  auto first = publish({k.meta, k.history}, k.pubsub);
  REQUIRE(first.type == reply::array);
  REQUIRE(first.elements.size() == 2);
  CHECK(first.elements[0].str == "e1");
  CHECK(first.elements[1].number == 1);

  auto idem = idempotency_key_for("herald:", "stream:42", "retry-1");
  auto second = publish({k.meta, k.history, idem}, k.pubsub);
  REQUIRE(second.type == reply::array);
  CHECK(second.elements.size() == 2);
  CHECK(second.elements[1].number == 2);
  auto retry = publish({k.meta, k.history, idem}, k.pubsub);
  REQUIRE(retry.type == reply::array);
  REQUIRE(retry.elements.size() == 3); // the first publication's position, stored once
  CHECK(retry.elements[1].number == 2);

  auto sync = redis.command(
    {"EVAL", herald::net::redis::sync_script, "2", k.meta, k.history, "e2", "0", "60", "e1", "2"});
  REQUIRE(sync.type == reply::array);
  REQUIRE(sync.elements.size() == 3);
  CHECK(sync.elements[0].str == "e1");
  CHECK(sync.elements[1].number == 2);
  CHECK(sync.elements[2].elements.size() == 2);
}

TEST_CASE("publish script: a version not above the channel's last (same version epoch) is "
          "neither stored nor published, compared exactly up to 2^64-1",
          "[redis][slot][version]") {
  one_node_cluster cluster(true);
  auto& redis = *cluster.server;
  auto k = keys_for("herald:", "stream:9");
  auto publish = [&](std::string version, std::string version_epoch = {}) {
    return redis.command({"EVAL", herald::net::redis::publish_script, "2", k.meta, k.history,
                          k.pubsub, "stream:9", "ev", "{}", "16", "60", "e1", "60", "PUBLISH", "",
                          std::move(version), std::move(version_epoch)});
  };
  auto len = [&] { return redis.command({"XLEN", k.history}).number; };
  CHECK(publish("5").elements.size() == 2);
  CHECK(publish("").elements.size() == 2);  // no version: not guarded
  auto stale = publish("5");                // equal: stale
  REQUIRE(stale.elements.size() == 3);
  CHECK(stale.elements[2].number == 2);
  CHECK(stale.elements[1].number == 2);     // the channel's unchanged offset
  CHECK(publish("4").elements.size() == 3); // below
  CHECK(len() == 2);
  // Beyond 2^53 (where doubles lose digits): compared as decimal strings.
  CHECK(publish("18446744073709551614").elements.size() == 2);
  CHECK(publish("18446744073709551613").elements.size() == 3);
  CHECK(publish("9999999999999999999").elements.size() == 3); // fewer digits: below
  CHECK(publish("18446744073709551615").elements.size() == 2);
  // Another version epoch starts its own count.
  CHECK(publish("1", "reindex-2").elements.size() == 2);
  CHECK(publish("1", "reindex-2").elements.size() == 3);
  CHECK(len() == 5);
  auto meta = redis.command({"HGET", k.meta, "version"});
  CHECK(meta.str == "1");
}

