// channel_set: a pub/sub connection's channel bookkeeping, without Redis.
// Each case plays what the subscriber does (want, take_changes, Redis's
// confirmations) and reads what it would send and report.
#include "net/redis/channel_set.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using herald::net::redis::channel_set;
using state = channel_set::state;
using strings = std::vector<std::string>;

namespace {

// A set connected, with `channels` subscribed and confirmed.
channel_set subscribed(const strings& channels) {
  channel_set s;
  s.connected();
  for (const auto& c : channels)
    s.want(c);
  auto ch = s.take_changes();
  for (const auto& c : ch.subscribe)
    s.on_subscribed(c);
  return s;
}

} // namespace

TEST_CASE("channel_set: changes wait for a connection, then go out in one batch, sorted",
          "[redis][channel_set]") {
  channel_set s;
  CHECK(s.want("b"));
  CHECK(s.want("a"));
  CHECK_FALSE(s.want("a")); // already wanted: no change
  CHECK(s.wanted_count() == 2);
  CHECK_FALSE(s.has_changes()); // not connected: nothing to send
  CHECK(s.take_changes().empty());
  CHECK_FALSE(s.settled());

  s.connected();
  CHECK(s.has_changes());
  CHECK_FALSE(s.settled()); // waits for a and b
  CHECK(s.unsettled() == strings{"a", "b"});
  auto ch = s.take_changes();
  CHECK(ch.subscribe == strings{"a", "b"});
  CHECK(ch.unsubscribe.empty());
  CHECK_FALSE(s.has_changes());
  CHECK(s.server_state("a") == state::subscribing);
  CHECK_FALSE(s.confirmed("a"));

  CHECK(s.on_subscribed("a")); // report it
  CHECK(s.confirmed("a"));
  CHECK_FALSE(s.settled());
  CHECK(s.on_subscribed("b"));
  CHECK(s.settled());
  CHECK(s.confirmed_count() == 2);
}

TEST_CASE("channel_set: many changes of one turn are one batch, unwanted ones unsubscribe",
          "[redis][channel_set]") {
  auto s = subscribed({"a", "b", "c"});
  s.unwant("a");
  s.unwant("c");
  s.want("d");
  CHECK_FALSE(s.unwant("zz")); // never wanted
  CHECK_FALSE(s.wanted("a"));
  CHECK_FALSE(s.confirmed("a")); // its messages are dropped from now on
  auto ch = s.take_changes();
  CHECK(ch.subscribe == strings{"d"});
  CHECK(ch.unsubscribe == strings{"a", "c"});
  CHECK(s.server_state("a") == state::unsubscribing);
  s.on_unsubscribed("a");
  s.on_unsubscribed("c");
  CHECK_FALSE(s.server_state("a"));
  CHECK_FALSE(s.has_changes());
  CHECK(s.on_subscribed("d"));
  CHECK(s.confirmed_count() == 2);
}

TEST_CASE("channel_set: a change within one turn that undoes itself sends nothing",
          "[redis][channel_set]") {
  auto s = subscribed({"a"});
  s.unwant("a");
  s.want("a");
  s.want("b");
  s.unwant("b");
  CHECK(s.take_changes().empty());
  CHECK(s.confirmed("a"));
  CHECK_FALSE(s.server_state("b"));
}

TEST_CASE("channel_set: at most one command in flight per channel", "[redis][channel_set]") {
  channel_set s;
  s.connected();

  SECTION("unwanted while its SUBSCRIBE is in flight: UNSUBSCRIBE after the confirmation") {
    s.want("t");
    CHECK(s.take_changes().subscribe == strings{"t"});
    s.unwant("t");
    CHECK(s.take_changes().empty()); // in flight: nothing more now
    CHECK_FALSE(s.on_subscribed("t")); // confirmed, but no longer wanted: not reported
    CHECK(s.has_changes());
    CHECK(s.take_changes().unsubscribe == strings{"t"});
    s.on_unsubscribed("t");
    CHECK_FALSE(s.server_state("t"));
    CHECK_FALSE(s.has_changes());
  }

  SECTION("wanted again while its UNSUBSCRIBE is in flight: SUBSCRIBE after the confirmation") {
    s.want("t");
    s.take_changes();
    s.on_subscribed("t");
    s.unwant("t");
    CHECK(s.take_changes().unsubscribe == strings{"t"});
    s.want("t");
    s.unwant("t");
    s.want("t"); // toggled in flight: ends wanted
    CHECK(s.take_changes().empty());
    s.on_unsubscribed("t");
    CHECK(s.has_changes());
    CHECK(s.take_changes().subscribe == strings{"t"});
    CHECK(s.on_subscribed("t"));
    CHECK(s.confirmed("t"));
  }

  SECTION("toggled in flight, ending unwanted: nothing is left subscribed") {
    s.want("t");
    s.take_changes();
    s.unwant("t");
    s.want("t");
    s.unwant("t");
    CHECK(s.take_changes().empty());
    CHECK_FALSE(s.on_subscribed("t"));
    CHECK(s.take_changes().unsubscribe == strings{"t"});
    s.on_unsubscribed("t");
    CHECK_FALSE(s.server_state("t"));
    CHECK_FALSE(s.wanted("t"));
  }
}

TEST_CASE("channel_set: a reconnect resubscribes the whole wanted set, changes made while down "
          "included",
          "[redis][channel_set]") {
  auto s = subscribed({"a", "b"});
  s.unwant("b");
  s.take_changes(); // UNSUBSCRIBE b in flight when the connection goes
  s.disconnected();
  CHECK_FALSE(s.is_connected());
  CHECK_FALSE(s.confirmed("a"));
  CHECK(s.confirmed_count() == 0);
  CHECK_FALSE(s.settled());
  s.want("c");
  s.unwant("a");
  s.want("a");
  CHECK_FALSE(s.has_changes());

  s.connected();
  CHECK(s.unsettled() == strings{"a", "c"});
  auto ch = s.take_changes();
  CHECK(ch.subscribe == strings{"a", "c"});
  CHECK(ch.unsubscribe.empty()); // Redis has nothing of b on a new connection
  CHECK(s.on_subscribed("a"));
  CHECK_FALSE(s.settled());
  CHECK(s.on_subscribed("c"));
  CHECK(s.settled());
}

TEST_CASE("channel_set: settled waits only for the channels wanted at the connect",
          "[redis][channel_set]") {
  channel_set s;
  s.want("a");
  s.want("b");
  s.connected();
  s.take_changes();
  s.want("late"); // reported by on_subscribed only, not waited for
  s.take_changes();
  CHECK(s.on_subscribed("a"));
  CHECK_FALSE(s.settled());
  s.unwant("b"); // no longer wanted: not waited for either
  CHECK(s.settled());

  channel_set empty;
  empty.connected();
  CHECK(empty.settled()); // nothing wanted: settled at once
}

TEST_CASE("channel_set: refused and dropped channels are lost: out of the wanted set, reported "
          "once",
          "[redis][channel_set]") {
  channel_set s;
  s.want("moved");
  s.want("kept");
  s.connected();
  s.take_changes();

  // An SSUBSCRIBE refused (MOVED): lost, and settled() stops waiting for it.
  CHECK(s.on_refused("moved"));
  CHECK_FALSE(s.wanted("moved"));
  CHECK_FALSE(s.server_state("moved"));
  CHECK(s.on_subscribed("kept"));
  CHECK(s.settled());
  CHECK_FALSE(s.on_refused("moved")); // no longer wanted: not reported again

  // An unasked sunsubscribe (its slot left the node): lost.
  CHECK(s.on_dropped("kept"));
  CHECK_FALSE(s.wanted("kept"));
  CHECK_FALSE(s.server_state("kept"));
  CHECK_FALSE(s.has_changes());
  CHECK_FALSE(s.on_dropped("kept"));

  // Dropped while already unwanted (its UNSUBSCRIBE not sent yet): not lost.
  s.want("x");
  s.take_changes();
  s.on_subscribed("x");
  s.unwant("x");
  CHECK_FALSE(s.on_dropped("x"));
  CHECK(s.take_changes().empty()); // Redis has nothing of it any more
  CHECK(s.wanted_count() == 0);

  // Lost channels can be wanted again (on another node, or after a move).
  CHECK(s.want("moved"));
  CHECK(s.take_changes().subscribe == strings{"moved"});
}

TEST_CASE("channel_set: confirmations of nothing in flight change nothing", "[redis][channel_set]") {
  auto s = subscribed({"a"});
  CHECK_FALSE(s.on_subscribed("a")); // a second confirmation: not reported twice
  CHECK_FALSE(s.on_subscribed("never"));
  s.on_unsubscribed("a"); // not unsubscribing: stays subscribed
  CHECK(s.confirmed("a"));
  CHECK_FALSE(s.has_changes());
}
