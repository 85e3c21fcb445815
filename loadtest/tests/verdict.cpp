// What a run expects and when it fails (loadtest/verdict.hpp), and the
// workers' reports added up (loadtest/worker_totals.hpp).
#include "loadtest/verdict.hpp"

#include "loadtest/worker_totals.hpp"

#include <catch2/catch.hpp>

using namespace herald::loadtest;

TEST_CASE("expected deliveries: per channel, or per connection when the server ignores channels") {
  reading_subscriptions subs;
  subs.per_channel = {3, 0, 5};
  subs.connections = 7;
  publisher_stats before;
  before.ok = 2;
  before.ok_per_channel = {1, 1, 0};
  publisher_stats now;
  now.ok = 6;
  now.ok_per_channel = {2, 3, 1};
  CHECK(expected_deliveries(now, nullptr, subs) == 2 * 3 + 1 * 5);
  CHECK(expected_deliveries(now, &before, subs) == 1 * 3 + 1 * 5);
  now.broadcast = true;
  CHECK(expected_deliveries(now, nullptr, subs) == 6 * 7);
  CHECK(expected_deliveries(now, &before, subs) == 4 * 7);
}

TEST_CASE("find-max step verdicts, first failing check first") {
  step_result s;
  s.expected = 10;
  s.received = 10;
  s.achieved_rate = 100;
  CHECK(step_verdict(s, 5, 100, 1000, false).empty());
  CHECK(step_verdict(s, 1500, 100, 1000, false) == "p99 over 1000 ms");
  CHECK(step_verdict(s, 5, 120, 1000, false) == "publisher fell behind");
  CHECK(step_verdict(s, 5, 100, 1000, true) == "publish errors");
  s.duplicates = 1;
  CHECK(step_verdict(s, 5, 100, 1000, false) == "duplicates/reordering");
  s.received = 9;
  CHECK(step_verdict(s, 1500, 120, 1000, true) == "loss");
}

TEST_CASE("judge: a clean run passes, each fault is named") {
  options o;
  o.publications = 10;
  run_result r;
  r.established = 5;
  r.pub.ok = 10;
  judge(r, o, false);
  CHECK(r.problems.empty());

  r.loss = 3;
  r.gap_notices = 1;
  r.pub.ok = 9;
  judge(r, o, true);
  REQUIRE(r.problems.size() == 4);
  CHECK(r.problems[0] == "interrupted");
  CHECK(r.problems[1] == "3 deliveries lost");
  CHECK(r.problems[2] == "1 gap notices from the server");
  CHECK(r.problems[3] == "only 9 of 10 publications were accepted");

  // With --find-max only the first step matters: the last one fails by design.
  o.find_max = true;
  run_result f;
  f.established = 5;
  f.loss = 3;
  step_result ok;
  ok.pass = true;
  f.steps.push_back(ok);
  f.steps.emplace_back();
  judge(f, o, false);
  CHECK(f.problems.empty());
}

TEST_CASE("worker totals: results win over progress, snapshots by id") {
  std::vector<worker_view> views(2);
  views[0].progress = {{"established", 1}, {"counters", {{"received", 5}, {"duplicates", 1}}}};
  views[0].result = {{"established", 4},
                     {"counters", {{"received", 10}, {"duplicates", 2}, {"last_recv_ns", 50}}}};
  views[1].progress = {
    {"established", 3},
    {"open", 3},
    {"counters", {{"received", 7}, {"first_recv_ns", 20}, {"last_recv_ns", 40}}}};
  views[1].snapshots[2] = {{"counters", {{"received", 1}}}};
  auto t = sum_latest(views);
  CHECK(t.established == 7);
  CHECK(t.open == 3);
  CHECK(t.received == 17);
  CHECK(t.unique() == 15);
  CHECK(t.first_recv_ns == 20);
  CHECK(t.last_recv_ns == 50);
  CHECK(sum_snapshot(views, 2).received == 1);
  CHECK(sum_snapshot(views, 3).received == 0);
}
