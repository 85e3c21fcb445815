// The publish script's reply as a result (net/redis/script_reply.hpp): what
// the gateway tells a publisher depends on these flags (stored or not).
// Pure: no server needed.
#include "net/redis/script_reply.hpp"

#include "reply_values.hpp"

#include <catch2/catch.hpp>

using herald::net::redis::reply;
using herald::net::redis::to_publish_result;
using herald::test::array;
using herald::test::integer;
using herald::test::string;

TEST_CASE("to_publish_result: stored, refused, unreplicated, disconnected",
          "[redis][script_reply]") {
  auto stored = to_publish_result(array({string("e1"), integer(7)}));
  CHECK(stored.ok);
  CHECK(stored.epoch == "e1");
  CHECK(stored.offset == 7u);
  CHECK_FALSE(stored.duplicate);

  // --redis-wait-replicas fell short: the master stored it; not a refusal.
  auto unrep = to_publish_result(
    reply::make_error("not replicated: 0 of 1 replicas confirmed the write within 1000 ms (WAIT)"));
  CHECK_FALSE(unrep.ok);
  CHECK(unrep.unreplicated);
  CHECK_FALSE(unrep.refused);

  auto readonly =
    to_publish_result(reply::make_error("READONLY You can't write against a read only replica."));
  CHECK(readonly.refused);
  CHECK_FALSE(readonly.unreplicated);

  auto gone = to_publish_result(reply::disconnected());
  CHECK_FALSE(gone.refused);
  CHECK_FALSE(gone.unreplicated);
}
