// publish_ticket: one answer for a whole publish, from every channel's
// outcome (docs/protocol.md "Publish outcomes"). Plain code: no actor runs.
#define CAF_SUITE actors.publish_ticket
#include "actors/publish_ticket.hpp"

#include <caf/test/unit_test.hpp>

#include <memory>
#include <string>
#include <vector>

using namespace herald;
using namespace herald::actors;
using failure = publish_ticket::failure;

namespace {

struct answer {
  int calls = 0;
  net::publish_outcome outcome;
  std::string body; ///< the message (empty when stored)
  /// The HTTP status POST /v1/publish answers it with.
  unsigned status() const { return outcome.stored() ? 200u : info(outcome.code).http_status; }
};

std::shared_ptr<publish_ticket> ticket(std::vector<std::string> channels, answer& a) {
  net::http::publish_request req{std::move(channels), "e", "{}"};
  return std::make_shared<publish_ticket>(
    std::move(req), [&a](const publish_ticket&, const net::publish_outcome& o) {
      ++a.calls;
      a.outcome = o;
      a.body = o.message;
    });
}

using result = net::publish_outcome::result;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

CAF_TEST(every channel stored gives 200 with the offsets) {
  answer a;
  auto t = ticket({"a", "b"}, a);
  t->complete(1, 4, "r1");
  CAF_CHECK_EQUAL(a.calls, 0);
  t->complete(0, 7, "r1");
  CAF_CHECK_EQUAL(a.calls, 1);
  CAF_CHECK_EQUAL(a.status(), 200u);
  CAF_REQUIRE_EQUAL(a.outcome.positions.size(), 2u);
  CAF_CHECK_EQUAL(a.outcome.positions[0].offset, 7u);
  CAF_CHECK_EQUAL(a.outcome.positions[0].epoch, "r1");
  CAF_CHECK_EQUAL(a.outcome.positions[1].offset, 4u);
}

CAF_TEST(not stored only when no channel may have stored it) {
  answer a;
  auto t = ticket({"a"}, a);
  t->fail(0, failure::not_stored, "not sent: not connected to Redis");
  CAF_CHECK_EQUAL(a.status(), 503u);
  CAF_CHECK(a.outcome.what == result::not_stored);
  CAF_CHECK(a.outcome.code == errc::unavailable);
  CAF_CHECK(has(a.body, "Redis did not store the publication (not sent: not connected to Redis); "
                        "retry"));

  // A failure does not answer before the other channels have reported:
  // the second channel did store it, so "did not store" would be untrue.
  answer m;
  auto mixed = ticket({"a", "b"}, m);
  mixed->fail(0, failure::not_stored, "READONLY x");
  CAF_CHECK_EQUAL(m.calls, 0);
  mixed->complete(1, 3, "r1");
  CAF_CHECK_EQUAL(m.calls, 1);
  CAF_CHECK_EQUAL(m.status(), 503u);
  CAF_CHECK(m.outcome.what == result::maybe_stored);
  CAF_CHECK(!has(m.body, "did not store"));
  CAF_CHECK(has(m.body, "stored the publication on 1 of 2 channels, not on channel a: READONLY x"));
  CAF_CHECK(has(m.body, "retry with the same Idempotency-Key"));
}

CAF_TEST(unknown wins over every other failure) {
  answer a;
  auto t = ticket({"a", "b", "c"}, a);
  t->fail(0, failure::not_stored, "READONLY x");
  t->fail(2, failure::not_replicated, "not replicated: 0 of 1");
  t->fail(1, failure::unknown, "no reply from Redis");
  CAF_CHECK_EQUAL(a.calls, 1);
  CAF_CHECK_EQUAL(a.status(), 503u);
  CAF_CHECK(a.outcome.what == result::maybe_stored);
  CAF_CHECK(has(a.body, "Redis may have stored the publication (channel b: no reply from Redis): "
                        "retry with the same Idempotency-Key; without one a retry may store it "
                        "twice"));
}

CAF_TEST(stored everywhere but not replicated somewhere) {
  answer a;
  auto t = ticket({"a", "b"}, a);
  t->complete(0, 1, "r1");
  t->fail(1, failure::not_replicated, "not replicated: 0 of 1 replicas confirmed");
  CAF_CHECK_EQUAL(a.status(), 503u);
  CAF_CHECK(a.outcome.what == result::not_replicated);
  CAF_CHECK(has(a.body, "Redis stored the publication, but channel b: not replicated: 0 of 1"));
}

CAF_TEST(a ticket dropped before every channel reported answers dropped as internal) {
  answer a;
  {
    auto t = ticket({"a", "b"}, a);
    t->complete(0, 1, "r1");
  } // the last holder let it go with channel b unreported (an actor died with it)
  CAF_CHECK_EQUAL(a.calls, 1);
  CAF_CHECK(a.outcome.what == result::dropped);
  CAF_CHECK(a.outcome.code == errc::internal);
  CAF_CHECK_EQUAL(a.status(), 500u);
  CAF_CHECK(a.outcome.positions.empty());
}
