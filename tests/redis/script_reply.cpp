// The publish script's reply as a result (net/redis/script_reply.hpp): what
// the gateway tells a publisher depends on its outcome (stored, not
// replicated, not stored, unknown). Pure, except wait_for_replicas(), which
// runs WAIT on a real redis-server.
#include "net/redis/script_reply.hpp"

#include "reply_values.hpp"
#include "started_client.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using namespace herald::net::redis;
using namespace herald::test;

using outcome = herald::net::redis::backend::outcome;

TEST_CASE("to_publish_result: stored, refused, unreplicated, disconnected",
          "[redis][script_reply]") {
  auto stored = to_publish_result(array({string("e1"), integer(7)}));
  CHECK(stored.ok);
  CHECK(stored.what == outcome::stored);
  CHECK(stored.epoch == "e1");
  CHECK(stored.offset == 7u);
  CHECK_FALSE(stored.duplicate);

  // --redis-wait-replicas fell short: the master stored it; not a refusal.
  auto unrep = to_publish_result(
    reply::make_error("not replicated: 0 of 1 replicas confirmed the write within 1000 ms (WAIT)"));
  CHECK_FALSE(unrep.ok);
  CHECK(unrep.what == outcome::not_replicated);
  CHECK_FALSE(unrep.refused);

  auto readonly =
    to_publish_result(reply::make_error("READONLY You can't write against a read only replica."));
  CHECK(readonly.refused);
  CHECK(readonly.what == outcome::not_stored);

  // Sent, then the connection went (or timed out): it may have run.
  auto gone = to_publish_result(reply::disconnected());
  CHECK_FALSE(gone.refused);
  CHECK(gone.what == outcome::unknown);
  CHECK_THAT(gone.error, Catch::Contains("after the script was sent"));

  // Never written: it cannot have run.
  auto unsent = to_publish_result(reply::not_sent());
  CHECK_FALSE(unsent.refused);
  CHECK(unsent.what == outcome::not_stored);
}

TEST_CASE("to_publish_result: a third element says a retry (1) or a stale version (2)",
          "[redis][script_reply]") {
  auto retry = to_publish_result(array({string("e1"), integer(7), integer(1)}));
  CHECK(retry.ok);
  CHECK(retry.duplicate);
  CHECK_FALSE(retry.stale_version);
  auto stale = to_publish_result(array({string("e1"), integer(7), integer(2)}));
  CHECK(stale.ok);
  CHECK(stale.stale_version);
  CHECK_FALSE(stale.duplicate);
  CHECK(stale.offset == 7u);
}

// Issue 19: "not stored" only where Redis refused before running the script.
TEST_CASE("to_publish_result: errors before the script ran are not stored, others unknown",
          "[redis][script_reply]") {
  const std::vector<std::pair<std::string, outcome>> errors = {
    {"NOSCRIPT No matching script. Please use EVAL.", outcome::not_stored},
    {"MOVED 3999 127.0.0.1:6381", outcome::not_stored},
    {"ASK 3999 127.0.0.1:6381", outcome::not_stored},
    {"TRYAGAIN Multiple keys request during rehashing of slot", outcome::not_stored},
    {"CLUSTERDOWN The cluster is down", outcome::not_stored},
    {"READONLY You can't write against a read only replica.", outcome::not_stored},
    {"LOADING Redis is loading the dataset in memory", outcome::not_stored},
    {"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
     outcome::not_stored},
    {"BUSY Redis is busy running a script.", outcome::not_stored},
    {"NOAUTH Authentication required.", outcome::not_stored},
    {"CROSSSLOT Keys in request don't hash to the same slot", outcome::not_stored},
    // A script error may come after some of its writes (a refused PUBLISH
    // comes after the XADD); OOM may follow the DEL of a new channel.
    {"ERR Error running script (call to f_1): @user_script:40: Wrong number of args",
     outcome::unknown},
    {"NOPERM this user has no permissions to access the 'x' channel", outcome::unknown},
    {"OOM command not allowed when used memory > 'maxmemory'.", outcome::unknown},
    {"MOVEDX not a code", outcome::unknown},
    {"WRONGTYPE Operation against a key holding the wrong kind of value", outcome::unknown},
  };
  for (const auto& [text, what] : errors) {
    INFO(text);
    auto r = to_publish_result(reply::make_error(text));
    CHECK(r.what == what);
    CHECK(r.refused);
  }
  CHECK(to_publish_result(integer(3)).what == outcome::unknown); // an unexpected reply
}

namespace {

// A started connection, for wait_for_replicas() after a (made-up) stored
// script reply: {"e1", 7}. `result` is what the publisher would be told.
struct waiting : started_connection {
  using started_connection::started_connection;
  std::optional<herald::net::redis::backend::publish_result> result;

  void wait(std::size_t replicas, std::chrono::milliseconds timeout) {
    wait_for_replicas(*conn, replicas, timeout, array({string("e1"), integer(7)}),
                      [this](reply w) { result = to_publish_result(std::move(w)); });
  }
  void require_result() {
    REQUIRE(f.run_until([this] { return result.has_value(); }, 3s));
  }
};

// A server whose WAIT is renamed away: WAIT answers an error.
struct waiting_without_wait : waiting {
  waiting_without_wait()
    : waiting({"--rename-command", "WAIT", ""}) {}
};

} // namespace

// Issue 19: once the script's reply says stored, a failing WAIT (an error, a
// drop before or after it was written, a timeout) is "stored, not
// replicated", never passed on as the publish's own error ("not stored").
TEST_CASE_METHOD(waiting, "wait_for_replicas: the master stored it, whatever WAIT does",
                 "[redis][script_reply]") {
  start();
  SECTION("enough replicas (0 asked): stored") {
    wait(0, 100ms);
    require_result();
    CHECK(result->what == outcome::stored);
    CHECK(result->offset == 7u);
  }
  SECTION("WAIT falls short") {
    wait(1, 100ms);
    require_result();
    CHECK(result->what == outcome::not_replicated);
    CHECK_THAT(result->error, Catch::Contains("0 of 1 replicas"));
  }
  SECTION("the connection drops while WAIT blocks") {
    wait(1, 5000ms);
    REQUIRE(f.run_until(
      [&] {
        return srv.command({"INFO", "clients"}).str.find("blocked_clients:1") != std::string::npos;
      },
      2s));
    conn->drop("test: dropped during WAIT");
    require_result();
    CHECK(result->what == outcome::not_replicated);
    CHECK_FALSE(result->refused);
    CHECK_THAT(result->error, Catch::Contains("WAIT got no reply"));
    CHECK_THAT(result->error, Catch::Contains("offset 7 of epoch e1"));
  }
  SECTION("the connection drops before WAIT is written") {
    wait(1, 5000ms);
    conn->drop("test: dropped before WAIT left");
    require_result();
    CHECK(result->what == outcome::not_replicated);
  }
}

TEST_CASE_METHOD(waiting_without_wait, "wait_for_replicas: a WAIT error is not replicated",
                 "[redis][script_reply]") {
  start();
  wait(1, 100ms);
  require_result();
  CHECK(result->what == outcome::not_replicated);
  CHECK_FALSE(result->refused);
  CHECK_THAT(result->error, Catch::Contains("WAIT failed"));
}
