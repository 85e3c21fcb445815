// The --redis-wait-replicas check both backends run (net/redis/replica_check.hpp):
// one master's check against real redis-server processes (a master, and a
// replica that syncs from it or is frozen), and replica_watch's loop with
// made-up answers.
#include "net/redis/replica_check.hpp"

#include <catch2/catch.hpp>

#include "started_client.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using namespace herald::net::redis;
using namespace herald::test;

namespace {

// A started connection to the master, and what its check answered.
struct master : started_connection {
  // A replica's full sync starts at once (not after the default 5 s).
  explicit master(std::vector<std::string> args = {"--repl-diskless-sync-delay", "0"})
    : started_connection(std::move(args)) {}
  std::optional<std::string> why;

  /// Runs check_master_replicas() for `replicas` replicas within `wait`,
  /// as the master `node` ("" for the standalone one); REQUIREs the answer.
  std::string check(std::size_t replicas, std::chrono::milliseconds wait,
                    const std::string& node = {}) {
    why.reset();
    check_master_replicas(conn, keys_for("herald:", "herald.probe"), replicas, wait, node,
                          [this](const std::string& w) { why = w; });
    REQUIRE(f.run_until([this] { return why.has_value(); }, 3s));
    return *why;
  }
};

// A master whose EVAL is renamed away: the probe write is refused.
struct master_without_eval : master {
  master_without_eval()
    : master({"--rename-command", "EVAL", ""}) {}
};

} // namespace

TEST_CASE_METHOD(master, "check_master_replicas: too few replicas online, named by master",
                 "[redis][replica_check]") {
  start();
  CHECK(check(1, 100ms) == "the Redis master has 0 replica(s) connected and in sync; "
                           "--redis-wait-replicas=1 needs 1");
  CHECK(check(2, 100ms, "10.0.0.1:7000") == "master 10.0.0.1:7000 has 0 replica(s) connected and "
                                            "in sync; --redis-wait-replicas=2 needs 2");
}

TEST_CASE_METHOD(
  master, "check_master_replicas: a replica in sync passes, a frozen one falls short at WAIT",
  "[redis][replica_check]") {
  start();
  redis_server replica({"--replicaof", "127.0.0.1", std::to_string(srv.port())});
  REQUIRE(f.run_until(
    [&] {
      return online_replicas(srv.command({"INFO", "replication"}).str) == 1;
    },
    5s));
  // The first probe right after the sync is not always acknowledged within
  // 500 ms; replica_watch checks again every second, so a few tries here.
  std::string answer = check(1, 500ms);
  for (int i = 0; i < 4 && !answer.empty(); ++i)
    answer = check(1, 500ms);
  CHECK(answer == "");
  CHECK(check(2, 100ms) == "the Redis master has 1 replica(s) connected and in sync; "
                           "--redis-wait-replicas=2 needs 2");

  replica.freeze(); // still listed online (until repl-timeout), but confirms nothing
  CHECK(check(1, 100ms, "h:1") ==
        "master h:1: the readiness probe write was confirmed by 0 of 1 replica(s) within 100 ms "
        "(WAIT)");
  replica.thaw();
}

TEST_CASE_METHOD(master_without_eval, "check_master_replicas: a refused probe write says so",
                 "[redis][replica_check]") {
  start();
  CHECK_THAT(check(0, 100ms), Catch::StartsWith("the readiness probe write failed: ERR"));
  CHECK_THAT(check(0, 100ms, "h:1"), Catch::StartsWith("master h:1: the readiness probe write "
                                                       "failed: ERR"));
}

TEST_CASE("replica_watch: reports what is awaited, then each change, until stop()",
          "[redis][replica_check]") {
  io_fixture f;
  std::vector<std::pair<bool, std::string>> reports;
  int checks = 0;
  // Answers of checks 1, 3, 4 (check 2 cannot start: nothing reported).
  auto watch = replica_watch::create(
    f.ex,
    [&](const replica_watch::done_fn& done) {
      ++checks;
      if (checks == 2)
        return false;
      if (checks <= 3)
        done(false, "short");
      else
        done(true, {});
      return true;
    },
    [&](bool ok, const std::string& why) { reports.emplace_back(ok, why); });
  watch->start("waiting");
  CHECK(checks == 1); // the first check at once
  REQUIRE(f.run_until([&] { return checks == 4; }, 5s));
  watch->stop();
  const std::vector<std::pair<bool, std::string>> expected = {
    {false, "waiting"}, {false, "short"}, {true, ""}};
  CHECK(reports == expected); // check 3 repeated check 1's answer: not reported
  f.run_for(1500ms);
  CHECK(checks == 4); // no check after stop()
}
