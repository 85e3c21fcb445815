// The per-channel checks every delivery goes through (loadtest/subscription_track.hpp):
// duplicates, order and gaps by offset, by seq where there are no offsets,
// and what a subscribe answer does to the position.
#include "loadtest/subscription_track.hpp"

#include <catch2/catch.hpp>

using namespace herald::loadtest;

TEST_CASE("offsets: in order, duplicate, late, gap filled") {
  subscription_track t;
  delivery_counters c;
  t.check(true, 5, 1, c); // the first delivery sets the position
  t.check(true, 6, 2, c);
  CHECK(c.duplicates == 0);
  CHECK(c.out_of_order == 0);
  t.check(true, 6, 2, c);
  CHECK(c.duplicates == 1);
  t.check(true, 9, 5, c); // 7 and 8 skipped
  CHECK(c.offset_gaps == 2);
  t.check(true, 7, 3, c); // late, fills one of them
  CHECK(c.out_of_order == 1);
  CHECK(c.offset_gaps == 1);
  t.check(true, 7, 3, c); // and is now a duplicate
  CHECK(c.duplicates == 2);
  CHECK(t.last_offset == 9);
  CHECK(t.last_seq == 5);
}

TEST_CASE("offsets advance but seq goes back: out of order") {
  subscription_track t;
  delivery_counters c;
  t.check(true, 1, 10, c);
  t.check(true, 2, 9, c);
  CHECK(c.out_of_order == 1);
  CHECK(c.duplicates == 0);
}

TEST_CASE("without offsets the seq decides") {
  subscription_track t;
  delivery_counters c;
  t.check(false, 0, 1, c);
  t.check(false, 0, 2, c);
  t.check(false, 0, 2, c);
  t.check(false, 0, 1, c);
  CHECK(c.duplicates == 1);
  CHECK(c.out_of_order == 1);
  CHECK_FALSE(t.offset_known);
}

TEST_CASE("subscribe answers: live from the head unless recovered in the same epoch") {
  subscription_track t;
  CHECK_FALSE(t.asks_recovery(true)); // no epoch yet
  CHECK_FALSE(t.on_subscribed(false, false, "e1", 10));
  CHECK(t.subscribed);
  CHECK(t.epoch == "e1");
  CHECK(t.last_offset == 10);
  delivery_counters c;
  t.check(true, 11, 1, c);

  // Resumed and recovered in the same epoch: the position stays.
  t.subscribed = false;
  CHECK(t.asks_recovery(true));
  CHECK_FALSE(t.asks_recovery(false));
  CHECK_FALSE(t.on_subscribed(true, true, "e1", 20));
  CHECK(t.last_offset == 11);

  // Asked and refused: a gap, and live from the head.
  CHECK(t.on_subscribed(true, false, "e1", 30));
  CHECK(t.last_offset == 30);

  // Recovered but in another epoch: live from the head, no gap reported.
  CHECK_FALSE(t.on_subscribed(true, true, "e2", 40));
  CHECK(t.epoch == "e2");
  CHECK(t.last_offset == 40);
  t.check(true, 41, 2, c);
  CHECK(c.offset_gaps == 0);
  CHECK(c.duplicates == 0);
}
