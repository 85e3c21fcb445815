#include "net/core/outbound_queue.hpp"

#include <catch2/catch.hpp>

#include "net/obs/metrics.hpp"
#include "net/wire/frame.hpp"

#include <string>
#include <string_view>
#include <vector>

using herald::net::frame;
using herald::net::make_frame;
using herald::net::outbound_queue;
using wm = herald::net::outbound_queue::watermark;

namespace {

// The value of `series` in the metrics exposition (net/obs/metrics.hpp).
double scrape(const std::string& series) {
  auto text = herald::net::metrics::render();
  auto at = text.find("\n" + series + " ");
  REQUIRE(at != std::string::npos);
  auto start = at + 1 + series.size() + 1;
  return std::stod(text.substr(start, text.find('\n', start) - start));
}

frame bytes(std::size_t n, char c = 'x') {
  return make_frame(std::string(n, c));
}

std::string joined(const std::vector<std::string_view>& bufs) {
  std::string s;
  for (auto b : bufs)
    s += b;
  return s;
}

// Writes everything (one item per write) and returns the transitions seen.
std::vector<wm> drain(outbound_queue& q) {
  std::vector<wm> seen;
  while (!q.empty()) {
    std::vector<std::string_view> bufs;
    REQUIRE(q.begin_write(bufs, 1, 1 << 20) == 1);
    seen.push_back(q.complete_write());
  }
  return seen;
}

} // namespace

TEST_CASE("a new queue is empty", "[outbound_queue]") {
  outbound_queue q{100};
  CHECK(q.empty());
  CHECK_FALSE(q.writing());
  CHECK(q.pending() == 0);
  CHECK(q.bytes() == 0);
  CHECK_FALSE(q.above_high_water_mark());
  CHECK(q.high_water_mark() == 100);
}

TEST_CASE("bytes() counts prefix and body exactly, in flight included", "[outbound_queue]") {
  outbound_queue q{1000};
  CHECK(q.push("id: 1\n", bytes(10)) == wm::none);
  CHECK(q.bytes() == 16);
  CHECK(q.push("", bytes(7)) == wm::none);
  CHECK(q.bytes() == 23);
  CHECK(q.push("ab", make_frame("")) == wm::none);
  CHECK(q.bytes() == 25);
  CHECK(q.pending() == 3);

  std::vector<std::string_view> bufs;
  REQUIRE(q.begin_write(bufs, 2, 1000) == 2);
  CHECK(q.writing());
  CHECK(q.pending() == 1);
  CHECK(q.bytes() == 25); // in flight still counted
  q.complete_write();
  CHECK_FALSE(q.writing());
  CHECK(q.bytes() == 2);
  CHECK(q.pending() == 1);
  bufs.clear();
  REQUIRE(q.begin_write(bufs, 8, 1000) == 1);
  q.complete_write();
  CHECK(q.bytes() == 0);
  CHECK(q.empty());
}

TEST_CASE("crossed_high is reported once per episode", "[outbound_queue][watermark]") {
  outbound_queue q{100};
  CHECK(q.push("", bytes(60)) == wm::none);
  CHECK(q.push("", bytes(40)) == wm::none); // exactly 100: not past the mark
  CHECK_FALSE(q.above_high_water_mark());
  CHECK(q.push("", bytes(1)) == wm::crossed_high); // 101
  CHECK(q.above_high_water_mark());
  CHECK(q.push("", bytes(50)) == wm::none); // still the same episode
  CHECK(q.push("", bytes(500)) == wm::none);
  CHECK(q.bytes() == 651);
  CHECK(q.above_high_water_mark());
}

TEST_CASE("back_to_low only at or below half the high-water mark", "[outbound_queue][watermark]") {
  outbound_queue q{100};
  // Items: 30, 30, 30, 20 = 110 (crossed at the 4th push).
  CHECK(q.push("", bytes(30)) == wm::none);
  CHECK(q.push("", bytes(30)) == wm::none);
  CHECK(q.push("", bytes(30)) == wm::none);
  CHECK(q.push("", bytes(20)) == wm::crossed_high);
  std::vector<std::string_view> bufs;

  REQUIRE(q.begin_write(bufs, 1, 1000) == 1);
  CHECK(q.complete_write() == wm::none); // 80: below the high mark, above the low
  CHECK(q.bytes() == 80);
  CHECK(q.above_high_water_mark());
  // Pushing while between the marks does not report a new crossing.
  CHECK(q.push("", bytes(30)) == wm::none); // 110 again, same episode
  bufs.clear();
  REQUIRE(q.begin_write(bufs, 1, 1000) == 1);
  CHECK(q.complete_write() == wm::none); // 80
  bufs.clear();
  REQUIRE(q.begin_write(bufs, 1, 1000) == 1);
  CHECK(q.complete_write() == wm::back_to_low); // 80 - 30 = 50 == 100 / 2
  CHECK(q.bytes() == 50);
  CHECK_FALSE(q.above_high_water_mark());
}

TEST_CASE("watermark episodes: 51 is not low, 50 is", "[outbound_queue][watermark]") {
  outbound_queue q{100};
  CHECK(q.push("", bytes(50)) == wm::none);
  CHECK(q.push("", bytes(1)) == wm::none);
  CHECK(q.push("", bytes(50)) == wm::crossed_high); // 101
  std::vector<std::string_view> bufs;
  REQUIRE(q.begin_write(bufs, 1, 1000) == 1);
  CHECK(q.complete_write() == wm::none); // 51 left: above half
  CHECK(q.bytes() == 51);
  CHECK(q.above_high_water_mark());
  bufs.clear();
  REQUIRE(q.begin_write(bufs, 1, 1000) == 1);
  CHECK(q.complete_write() == wm::back_to_low); // 50 left: exactly half
  CHECK(q.bytes() == 50);
  CHECK_FALSE(q.above_high_water_mark());
  bufs.clear();
  REQUIRE(q.begin_write(bufs, 1, 1000) == 1);
  CHECK(q.complete_write() == wm::none); // once per episode
  CHECK(q.empty());

  SECTION("a second episode is reported again") {
    CHECK(q.push("", bytes(101)) == wm::crossed_high);
    CHECK(q.push("", bytes(1)) == wm::none);
    auto seen = drain(q);
    REQUIRE(seen.size() == 2);
    CHECK(seen[0] == wm::back_to_low);
    CHECK(seen[1] == wm::none);
    CHECK(q.push("", bytes(200)) == wm::crossed_high);
  }
}

TEST_CASE("odd high-water mark: the low mark rounds down", "[outbound_queue][watermark]") {
  outbound_queue q{11};
  CHECK(q.push("", bytes(6)) == wm::none);
  CHECK(q.push("", bytes(6)) == wm::crossed_high); // 12 > 11
  std::vector<std::string_view> bufs;
  REQUIRE(q.begin_write(bufs, 1, 1000) == 1);
  CHECK(q.complete_write() == wm::none); // 6 > 11/2 == 5
  CHECK(q.push("", make_frame("")) == wm::none);
  outbound_queue r{11};
  CHECK(r.push("", bytes(7)) == wm::none);
  CHECK(r.push("", bytes(5)) == wm::crossed_high);
  bufs.clear();
  REQUIRE(r.begin_write(bufs, 1, 1000) == 1);
  CHECK(r.complete_write() == wm::back_to_low); // 5 <= 5
}

TEST_CASE("a single item larger than the mark crosses it", "[outbound_queue][watermark]") {
  outbound_queue q{10};
  CHECK(q.push("prefix", bytes(5)) == wm::crossed_high); // 11 with its prefix
  auto seen = drain(q);
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == wm::back_to_low);
}

TEST_CASE("begin_write respects max_items", "[outbound_queue][write]") {
  outbound_queue q{1000};
  for (char c : std::string("abcde"))
    q.push("", make_frame(std::string(1, c)));
  std::vector<std::string_view> bufs;
  CHECK(q.begin_write(bufs, 3, 1000) == 3);
  CHECK(joined(bufs) == "abc");
  CHECK(bufs.size() == 3);
  CHECK(q.pending() == 2);
  q.complete_write();
  bufs.clear();
  CHECK(q.begin_write(bufs, 3, 1000) == 2);
  CHECK(joined(bufs) == "de");
  q.complete_write();
  CHECK(q.empty());
}

TEST_CASE("begin_write respects max_bytes but always takes one item", "[outbound_queue][write]") {
  outbound_queue q{1000};
  q.push("", bytes(4, 'a'));
  q.push("", bytes(4, 'b'));
  q.push("", bytes(4, 'c'));
  q.push("", bytes(100, 'd'));
  std::vector<std::string_view> bufs;

  SECTION("the items that fit, at least the first") {
    struct fit {
      const char* what;
      std::size_t max_bytes, items;
      const char* written;
    };
    for (auto [what, max_bytes, items, written] :
         {fit{"exact fit", 8, 2, "aaaabbbb"}, fit{"one byte short", 7, 1, "aaaa"},
          fit{"max_bytes smaller than the first item", 1, 1, "aaaa"},
          fit{"max_bytes 0", 0, 1, "aaaa"}}) {
      CAPTURE(what);
      outbound_queue fresh{1000}; // the same four items, nothing written yet
      for (char c : {'a', 'b', 'c'})
        fresh.push("", bytes(4, c));
      fresh.push("", bytes(100, 'd'));
      bufs.clear();
      CHECK(fresh.begin_write(bufs, 10, max_bytes) == items);
      CHECK(joined(bufs) == written);
    }
  }
  SECTION("a large item after small ones is left for the next write") {
    CHECK(q.begin_write(bufs, 10, 50) == 3);
    CHECK(joined(bufs) == "aaaabbbbcccc");
    q.complete_write();
    bufs.clear();
    CHECK(q.begin_write(bufs, 10, 50) == 1); // 100 > 50, but at least one
    CHECK(joined(bufs) == std::string(100, 'd'));
    q.complete_write();
    CHECK(q.empty());
    CHECK(q.bytes() == 0);
  }
  SECTION("prefixes count towards max_bytes") {
    outbound_queue p{1000};
    p.push("12", bytes(3, 'a')); // 5
    p.push("34", bytes(3, 'b')); // 5
    std::vector<std::string_view> b;
    CHECK(p.begin_write(b, 10, 9) == 1);
    CHECK(b.size() == 2);
    CHECK(joined(b) == "12aaa");
  }
}

TEST_CASE("begin_write appends to the caller's buffers", "[outbound_queue][write]") {
  outbound_queue q{1000};
  q.push("", make_frame("x"));
  std::vector<std::string_view> bufs{"head"};
  CHECK(q.begin_write(bufs, 1, 100) == 1);
  REQUIRE(bufs.size() == 2);
  CHECK(bufs[0] == "head");
  CHECK(bufs[1] == "x");
}

TEST_CASE("prefix buffers come before their body, empty prefixes are skipped",
          "[outbound_queue][write]") {
  outbound_queue q{1000};
  auto shared = make_frame("event: e\ndata: 1\n\n");
  q.push("id: 1\n", shared);
  q.push("", make_frame(":\n\n"));
  q.push("id: 2\n", shared);
  std::vector<std::string_view> bufs;
  REQUIRE(q.begin_write(bufs, 10, 1000) == 3);
  REQUIRE(bufs.size() == 5);
  CHECK(bufs[0] == "id: 1\n");
  CHECK(bufs[1] == "event: e\ndata: 1\n\n");
  CHECK(bufs[2] == ":\n\n");
  CHECK(bufs[3] == "id: 2\n");
  CHECK(bufs[4] == "event: e\ndata: 1\n\n");
  // The body is the shared frame itself, not a copy.
  CHECK(bufs[1].data() == shared->data());
  CHECK(bufs[4].data() == shared->data());
  CHECK(joined(bufs) == "id: 1\nevent: e\ndata: 1\n\n:\n\nid: 2\nevent: e\ndata: 1\n\n");
}

TEST_CASE("drop_pending keeps the items in flight", "[outbound_queue]") {
  outbound_queue q{1000};
  q.push("p", bytes(10, 'a')); // 11
  q.push("", bytes(20, 'b'));  // 20
  q.push("", bytes(30, 'c'));  // 30
  q.push("", bytes(40, 'd'));  // 40
  std::vector<std::string_view> bufs;
  REQUIRE(q.begin_write(bufs, 2, 1000) == 2);
  q.drop_pending();
  CHECK(q.pending() == 0);
  CHECK(q.writing());
  CHECK_FALSE(q.empty());
  CHECK(q.bytes() == 31);
  // The buffers handed out are still valid (same items).
  CHECK(joined(bufs) == "p" + std::string(10, 'a') + std::string(20, 'b'));
  q.complete_write();
  CHECK(q.empty());
  CHECK(q.bytes() == 0);
  CHECK_FALSE(q.writing());

  SECTION("with nothing in flight it empties the queue") {
    q.push("", bytes(5));
    q.push("", bytes(5));
    q.drop_pending();
    CHECK(q.empty());
    CHECK(q.bytes() == 0);
  }
}

TEST_CASE("drop_pending above the mark: the next write reports back_to_low",
          "[outbound_queue][watermark]") {
  outbound_queue q{100};
  q.push("", bytes(10));
  CHECK(q.push("", bytes(200)) == wm::crossed_high);
  std::vector<std::string_view> bufs;
  REQUIRE(q.begin_write(bufs, 1, 1000) == 1);
  q.drop_pending();
  CHECK(q.bytes() == 10);
  CHECK(q.complete_write() == wm::back_to_low);
  CHECK(q.bytes() == 0);
}

TEST_CASE("the buffers of the write in flight stay valid while the queue grows",
          "[outbound_queue][write]") {
  // A short prefix (a WebSocket frame header) lives inside its item: pushing
  // more items must not move the items of the write in flight.
  outbound_queue q{1 << 20};
  q.push(std::string("\\x81\\x05"), make_frame("hello"));
  std::vector<std::string_view> views;
  REQUIRE(q.begin_write(views, 16, 1 << 20) == 1u);
  for (int i = 0; i < 1000; ++i)
    q.push(std::string("ab"), make_frame(std::to_string(i)));
  REQUIRE(views.size() == 2u);
  CHECK(views[0] == "\\x81\\x05");
  CHECK(views[1] == "hello");
  q.complete_write();
  CHECK(q.pending() == 1000u);
  views.clear();
  CHECK(q.begin_write(views, 256, 1 << 20) == 256u);
  CHECK(views[0] == "ab");
  CHECK(views[1] == "0");
  q.complete_write();
  q.drop_pending();
  CHECK(q.empty());
  CHECK(q.bytes() == 0u);
}

TEST_CASE("outbound queues keep the outbound-bytes gauge and observe publish-to-write",
          "[metrics]") {
  auto gauge = [] { return scrape("herald_outbound_buffer_bytes"); };
  auto count = [] { return scrape("herald_publish_to_write_seconds_count"); };
  auto g0 = gauge();
  auto c0 = count();
  {
    herald::net::outbound_queue q{1000};
    q.push("id: 1\n", herald::net::make_frame(std::string(100, 'x')),
           herald::net::metrics::now_ns());
    q.push({}, herald::net::make_frame(std::string(50, 'y')));    // no publication: not observed
    q.push({}, herald::net::make_frame(std::string(30, 'z')), 1); // long ago
    CHECK(gauge() == g0 + 186);
    std::vector<std::string_view> views;
    q.begin_write(views, 2, SIZE_MAX);
    q.complete_write(herald::net::metrics::now_ns());
    CHECK(gauge() == g0 + 30);
    CHECK(count() == c0 + 1);
    q.begin_write(views, 1, SIZE_MAX);
    q.push({}, herald::net::make_frame(std::string(7, 'w')));
    q.drop_pending(); // the 7 bytes go; the 30 in flight stay
    CHECK(gauge() == g0 + 30);
  } // destroyed with 30 bytes in flight
  CHECK(gauge() == g0);
  CHECK(count() == c0 + 1);
}

// -- conflation (overflow policy conflate, issue 22 section 4) -----------------

namespace {

// What the queue still holds, pending and in flight, one string per item.
std::vector<std::string> contents(outbound_queue& q) {
  std::vector<std::string> items;
  while (!q.empty()) {
    std::vector<std::string_view> bufs;
    REQUIRE(q.begin_write(bufs, 1, 1 << 20) == 1);
    items.push_back(joined(bufs));
    q.complete_write();
  }
  return items;
}

// A publication of channel `c` numbered `n`, 40 bytes.
frame publication_of(char c, int n) {
  auto s = std::string(1, c) + std::to_string(n);
  s.resize(40, '.');
  return make_frame(std::move(s));
}

} // namespace

TEST_CASE("conflation: a key holds one pending item at all times, far under the mark too",
          "[outbound_queue][conflate]") {
  outbound_queue q{1 << 20};
  for (int n = 0; n < 10; ++n) {
    CHECK(q.push("", publication_of('a', n), 0, 1) == wm::none);
    CHECK(q.pending() == 1);
  }
  CHECK(q.conflated() == 9);
  CHECK(q.bytes() == 40);
  CHECK(q.fixed_bytes() == 0);
  auto left = contents(q);
  REQUIRE(left.size() == 1u);
  CHECK(left[0].substr(0, 2) == "a9");
}

TEST_CASE("conflation: the newest item of a key goes last, after what was queued meanwhile",
          "[outbound_queue][conflate]") {
  // An SSE id line names every channel's position: a newer item must not
  // overtake an item queued after the one it replaces.
  outbound_queue q{1 << 20};
  q.push("", publication_of('a', 0), 0, 1);
  q.push("", publication_of('s', 0), 0, 0);
  q.push("", publication_of('a', 1), 0, 1);
  auto left = contents(q);
  REQUIRE(left.size() == 2u);
  CHECK(left[0].substr(0, 2) == "s0");
  CHECK(left[1].substr(0, 2) == "a1");
}

TEST_CASE("conflation: many publications of 3 channels into a tiny mark keep the newest of each, "
          "in order, and never cross the mark",
          "[outbound_queue][conflate]") {
  const auto counter = [] { return scrape("herald_conflated_publications_total"); };
  const auto gauge = [] { return scrape("herald_outbound_buffer_bytes"); };
  const auto counter_before = counter();
  const auto gauge_before = gauge();
  {
    outbound_queue q{100}; // less than three publications
    for (int n = 0; n < 50; ++n)
      for (char c : {'a', 'b', 'c'})
        CHECK(q.push("id: x\n", publication_of(c, n), 0, static_cast<std::uint32_t>(c)) ==
              wm::none);
    CHECK_FALSE(q.above_high_water_mark());
    CHECK(q.pending() == 3);
    CHECK(q.bytes() == 3 * 46);
    CHECK(q.conflated() == 147);
    CHECK(counter() == counter_before + 147);
    CHECK(gauge() == gauge_before + 3 * 46);
    auto left = contents(q);
    REQUIRE(left.size() == 3u);
    CHECK(left[0].substr(0, 9) == "id: x\na49");
    CHECK(left[1].substr(0, 9) == "id: x\nb49");
    CHECK(left[2].substr(0, 9) == "id: x\nc49");
  }
  CHECK(gauge() == gauge_before);
}

TEST_CASE("conflation: items without a key are never dropped, and still close at the mark",
          "[outbound_queue][conflate]") {
  outbound_queue q{100};
  CHECK(q.push("", make_frame("reply-1"), 0, 0) == wm::none);
  for (int n = 0; n < 20; ++n) {
    CHECK(q.push("", publication_of('a', n), 0, 7) == wm::none);
    CHECK(q.push("", publication_of('z', n), 0, 9) == wm::none);
  }
  CHECK(q.push("", make_frame("reply-2"), 0, 0) == wm::none);
  CHECK(q.push("", publication_of('a', 20), 0, 7) == wm::none);
  CHECK(q.fixed_bytes() == 14);
  CHECK(q.pending() == 4); // reply-1, z19, reply-2, a20
  CHECK(q.conflated() == 39);
  // A channel with policy close (no key): 40-byte publications pile up
  // until they alone pass the mark; conflation cannot shed them.
  CHECK(q.push("", publication_of('s', 0), 0, 0) == wm::none);
  CHECK(q.push("", publication_of('s', 1), 0, 0) == wm::none);
  CHECK(q.fixed_bytes() == 94);
  CHECK(q.push("", publication_of('s', 2), 0, 0) == wm::crossed_high);
  CHECK(q.above_high_water_mark());
  CHECK(q.push("", publication_of('a', 21), 0, 7) == wm::none); // once per episode
  auto left = contents(q);
  REQUIRE(left.size() == 7u);
  CHECK(left[0] == "reply-1");
  CHECK(left[1].substr(0, 3) == "z19");
  CHECK(left[2] == "reply-2");
  CHECK(left[3].substr(0, 2) == "s0"); // a20 was replaced by a21, which comes last
  CHECK(left[4].substr(0, 2) == "s1");
  CHECK(left[5].substr(0, 2) == "s2");
  CHECK(left[6].substr(0, 3) == "a21");
  CHECK(q.bytes() == 0);
  CHECK(q.fixed_bytes() == 0);
}

TEST_CASE("conflation: a frame in flight (maybe half written) is never dropped",
          "[outbound_queue][conflate]") {
  outbound_queue q{100};
  CHECK(q.push("hdr", publication_of('a', 0), 0, 1) == wm::none);
  std::vector<std::string_view> bufs;
  REQUIRE(q.begin_write(bufs, 8, 1 << 20) == 1); // the socket took part of it, say
  const auto in_flight = joined(bufs);
  for (int n = 1; n < 30; ++n)
    CHECK(q.push("hdr", publication_of('a', n), 0, 1) == wm::none);
  // The buffers handed to the socket still hold the same bytes.
  CHECK(joined(bufs) == in_flight);
  CHECK(q.pending() == 1); // only a29 waits
  CHECK(q.bytes() == 2 * 43);
  CHECK(q.conflated() == 28);
  q.complete_write();
  auto left = contents(q);
  REQUIRE(left.size() == 1u);
  CHECK(left[0].substr(0, 6) == "hdra29");
}

TEST_CASE("conflation: holes left by conflation behind a stuck write stay few",
          "[outbound_queue][conflate]") {
  outbound_queue q{100};
  q.push("", publication_of('a', 0), 0, 1);
  std::vector<std::string_view> bufs;
  REQUIRE(q.begin_write(bufs, 8, 1 << 20) == 1); // stuck: never completes here
  for (int n = 1; n <= 10'000; ++n) {
    q.push("", publication_of('a', n), 0, 1);
    q.push("", publication_of('b', n), 0, 2);
    q.push("", publication_of('c', n), 0, 3);
    if (n % 1000 == 0) // a reply now and then keeps its place
      q.push("", make_frame("r" + std::to_string(n / 1000)), 0, 0);
  }
  CHECK(q.pending() == 13);
  CHECK(q.conflated() == 3 * 10'000 - 3);
  CHECK(q.bytes() == 40 + 3 * 40 + 9 * 2 + 3);
  q.complete_write();
  auto left = contents(q);
  REQUIRE(left.size() == 13u);
  CHECK(left[0] == "r1");
  CHECK(left[8] == "r9");
  CHECK(left[9].substr(0, 6) == "a10000");
  CHECK(left[10].substr(0, 6) == "b10000");
  CHECK(left[11].substr(0, 6) == "c10000");
  CHECK(left[12] == "r10");
}

TEST_CASE("requeue_unwritten: whole items are done, the cut one stays in flight, the rest waits "
          "again in order",
          "[outbound_queue][write]") {
  outbound_queue q{1 << 20};
  q.push("h", make_frame("0123456789"), 0, 0); // 11 bytes
  q.push("h", make_frame("abcdefghij"), 0, 0); // 11
  q.push("h", make_frame("ABCDEFGHIJ"), 0, 0); // 11
  q.push("h", make_frame("klmnopqrst"), 0, 0); // 11
  std::vector<std::string_view> bufs;
  REQUIRE(q.begin_write(bufs, 8, 1 << 20) == 4);
  // The socket took the first item and 3 bytes of the second.
  CHECK(q.requeue_unwritten(14) == 8);
  CHECK(q.in_flight() == 2);
  CHECK(q.pending() == 2);
  CHECK(q.bytes() == 44); // nothing left the queue yet
  q.complete_write();
  CHECK(q.bytes() == 22);
  auto left = contents(q);
  REQUIRE(left.size() == 2u);
  CHECK(left[0] == "hABCDEFGHIJ");
  CHECK(left[1] == "hklmnopqrst");
}

TEST_CASE("requeue_unwritten: on an item boundary nothing is cut, and nothing written requeues all",
          "[outbound_queue][write]") {
  outbound_queue q{1 << 20};
  for (char c : {'a', 'b', 'c'})
    q.push("", make_frame(std::string(10, c)), 0, 0);
  std::vector<std::string_view> bufs;
  REQUIRE(q.begin_write(bufs, 8, 1 << 20) == 3);
  CHECK(q.requeue_unwritten(10) == 0);
  CHECK(q.in_flight() == 1);
  q.complete_write();
  bufs.clear();
  REQUIRE(q.begin_write(bufs, 8, 1 << 20) == 2);
  CHECK(q.requeue_unwritten(0) == 0);
  CHECK_FALSE(q.writing());
  CHECK(q.pending() == 2);
  auto left = contents(q);
  REQUIRE(left.size() == 2u);
  CHECK(left[0] == std::string(10, 'b'));
  CHECK(left[1] == std::string(10, 'c'));
}

TEST_CASE("requeue_unwritten: a requeued publication conflates with a newer one of its key, "
          "items without a key keep their order and are never dropped",
          "[outbound_queue][conflate][write]") {
  outbound_queue q{1 << 20};
  q.push("", publication_of('s', 0), 0, 0);
  q.push("", publication_of('a', 0), 0, 1);
  q.push("", publication_of('s', 1), 0, 0);
  q.push("", publication_of('b', 0), 0, 2);
  std::vector<std::string_view> bufs;
  REQUIRE(q.begin_write(bufs, 8, 1 << 20) == 4);
  q.push("", publication_of('a', 1), 0, 1); // arrives while a0 is in flight
  CHECK(q.requeue_unwritten(20) == 20);    // half of s0: a0, s1 and b0 go back
  CHECK(q.pending() == 3);                 // a0 gave way to a1
  CHECK(q.conflated() == 1);
  q.complete_write();
  auto left = contents(q);
  REQUIRE(left.size() == 3u);
  CHECK(left[0].substr(0, 2) == "s1");
  CHECK(left[1].substr(0, 2) == "b0");
  CHECK(left[2].substr(0, 2) == "a1");
  CHECK(q.bytes() == 0);
}

TEST_CASE("conflation: drop_pending resets what conflation counts", "[outbound_queue][conflate]") {
  outbound_queue q{100};
  for (int n = 0; n < 3; ++n)
    q.push("", publication_of('a', n), 0, 1);
  q.push("", make_frame("r"), 0, 0);
  q.drop_pending();
  CHECK(q.empty());
  CHECK(q.bytes() == 0);
  CHECK(q.fixed_bytes() == 0);
  q.push("", publication_of('a', 3), 0, 1);
  q.push("", publication_of('b', 3), 0, 2); // two keys: nothing to drop
  CHECK(q.pending() == 2);
}
