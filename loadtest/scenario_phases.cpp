#include "loadtest/scenario_phases.hpp"

#include "loadtest/clock.hpp"
#include "loadtest/newcomer_probe.hpp"
#include "loadtest/worker_totals.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <thread>

namespace herald::loadtest {

namespace {

// True once every worker has sent its `report` (ready, storm_done, result)
// or is gone.
std::function<bool(const std::vector<worker_view>&)> all_sent(nlohmann::json worker_view::*report) {
  return [report](const std::vector<worker_view>& v) {
    return std::all_of(v.begin(), v.end(), [report](const worker_view& w) {
      return !(w.*report).is_null() || !w.alive;
    });
  };
}

} // namespace

scenario_phases::scenario_phases(const options& o, const channel_plan& plan, run_result& r,
                                 worker_pool& pool, publisher& pub, server_monitor& monitor,
                                 timeline_recorder& timeline, const std::atomic<bool>& interrupted,
                                 std::int64_t start_ns, std::int64_t deadline_ns)
  : o_(o),
    plan_(plan),
    r_(r),
    pool_(pool),
    pub_(pub),
    monitor_(monitor),
    timeline_(timeline),
    interrupted_(interrupted),
    start_ns_(start_ns),
    deadline_ns_(deadline_ns) {}

void scenario_phases::run() {
  connect_phase();
  if (!stopping() && ready_established_ == 0 && o_.scen != scenario::idle) {
    say("stopping", "no connection was established: nothing to publish to");
  } else if (!stopping()) {
    if (o_.scen == scenario::idle)
      hold_phase();
    else if (o_.find_max)
      find_max_phase();
    else
      publish_phase();
  }
  finish_phase();
}

void scenario_phases::connect_phase() {
  say("connecting", std::to_string(o_.connections) + " connections at " +
                      std::to_string(static_cast<long>(o_.ramp_rate)) + "/s over " +
                      std::to_string(o_.workers) + " worker(s)");
  if (!wait_workers(all_sent(&worker_view::ready), deadline_ns_, "connecting"))
    r_.problems.push_back("not every connection attempt finished before the deadline");
  auto views = pool_.view();
  std::int64_t first = 0, last = 0;
  subs_.per_channel.assign(static_cast<std::size_t>(plan_.total()), 0);
  std::vector<std::uint64_t> by_target(o_.targets.size(), 0);
  for (const auto& v : views) {
    if (v.ready.is_null())
      continue;
    const auto& rd = v.ready;
    auto f = rd.value("first_start_ns", std::int64_t{0});
    if (f && (first == 0 || f < first))
      first = f;
    last = std::max(last, rd.value("last_established_ns", std::int64_t{0}));
    subs_.connections += rd.value("reading", std::uint64_t{0});
    for (const auto& e : rd["subs"])
      subs_.per_channel[e.at(0).get<std::size_t>()] += e.at(1).get<std::uint64_t>();
    auto bt = rd.value("by_target", std::vector<std::uint64_t>{});
    for (std::size_t i = 0; i < bt.size() && i < by_target.size(); ++i)
      by_target[i] += bt[i];
  }
  r_.establish_s = last > first ? static_cast<double>(last - first) / 1e9 : 0;
  std::uint64_t total = 0;
  for (auto n : by_target)
    total += n;
  for (std::size_t i = 0; i < r_.servers.size(); ++i) {
    auto& s = r_.servers[i];
    s.connections = r_.servers.size() == o_.targets.size() ? by_target[i]
                    : r_.servers.size() == 1               ? total
                                                           : total / r_.servers.size();
  }
  std::uint64_t ok = 0, failed = 0;
  for (const auto& v : views)
    if (!v.ready.is_null()) {
      ok += v.ready.value("established", std::uint64_t{0});
      failed += v.ready.value("failed", std::uint64_t{0});
    }
  ready_established_ = ok;
  char took[32];
  std::snprintf(took, sizeof took, "%.2f s", r_.establish_s);
  say("connected",
      std::to_string(ok) + " established, " + std::to_string(failed) + " failed in " + took);
  if (o_.scen != scenario::idle)
    sleep_ms(o_.settle_ms);
  else
    sleep_ms(std::max(o_.settle_ms, 1000.0)); // let the server's memory settle
  auto after = monitor_.sample(true);
  for (std::size_t i = 0; i < r_.servers.size(); ++i)
    r_.servers[i].after_connect = after[i];
}

void scenario_phases::hold_phase() {
  auto until = std::min(deadline_ns_, mono_ns() + seconds_ns(o_.hold_seconds));
  say("holding", std::to_string(o_.hold_seconds) + " s");
  while (!stopping() && mono_ns() < until) {
    sleep_ms(std::min(1000.0, static_cast<double>(until - mono_ns()) / 1e6));
    progress("holding");
  }
}

void scenario_phases::publish_phase() {
  char rate[32];
  std::snprintf(rate, sizeof rate, "%g", o_.rate);
  say("publishing",
      std::to_string(o_.publications) + " publications at " + rate + "/s to " + o_.publish_target);
  auto base = sum_latest(pool_.view()).unique();
  mark_publish_start();
  pub_.start(1, o_.publications, o_.rate);
  if (o_.scen == scenario::reconnect_storm)
    storm();
  if (!wait_publisher("publishing"))
    r_.problems.push_back("publishing did not finish before the deadline");
  drain(base, expected_deliveries(pub_.stats(), nullptr, subs_), "draining");
  mark_publish_end();
}

void scenario_phases::storm() {
  auto half = std::max<std::uint64_t>(1, o_.publications / 2);
  while (!stopping() && pub_.sent_count() < half)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  say("storm", "every connection drops and resumes now; new subscribers keep arriving");
  // Newcomers: fresh SSE subscribers of a channel outside the plan, one
  // after another (10 ms apart) for as long as the storm lasts.
  newcomer_probe newcomers(o_.targets.front(), "stream:storm-newcomers", 10, 5000);
  timeline_.mark("storm");
  pool_.broadcast({{"cmd", "reconnect"}});
  newcomers.start();
  wait_workers(all_sent(&worker_view::storm), deadline_ns_, "storm");
  timeline_.mark("resumed");
  newcomers.stop();
  r_.newcomers = newcomers.figures();
  if (r_.newcomers.attempted == 0)
    r_.problems.push_back("no new subscriber was tried during the storm");
  else if (r_.newcomers.accepted != r_.newcomers.attempted)
    r_.problems.push_back(std::to_string(r_.newcomers.attempted - r_.newcomers.accepted) + " of " +
                          std::to_string(r_.newcomers.attempted) +
                          " new subscribers not accepted during the storm");
}

void scenario_phases::find_max_phase() {
  double rate = o_.rate;
  std::uint64_t seq = 1;
  int snap = 0;
  mark_publish_start();
  while (!stopping()) {
    auto n = static_cast<std::uint64_t>(std::max(1.0, std::llround(rate * o_.step_seconds) * 1.0));
    // Start the step with fresh per-step latency histograms.
    int begin_id = ++snap;
    pool_.broadcast({{"cmd", "snapshot"}, {"id", begin_id}});
    if (!wait_workers(snapshot_from_all(begin_id), deadline_ns_, "find-max"))
      break;
    auto before_totals = sum_snapshot(pool_.view(), begin_id);
    auto before = pub_.stats();
    say("find-max", "step at " + std::to_string(static_cast<long>(rate)) +
                      "/s: " + std::to_string(n) + " publications");
    auto t0 = mono_ns();
    pub_.start(seq, n, rate);
    seq += n;
    wait_publisher("find-max");
    auto after = pub_.stats();
    auto expected = expected_deliveries(after, &before, subs_);
    drain(before_totals.unique(), expected, "find-max");
    int end_id = ++snap;
    pool_.broadcast({{"cmd", "snapshot"}, {"id", end_id}});
    if (!wait_workers(snapshot_from_all(end_id), deadline_ns_, "find-max"))
      break;
    auto after_totals = sum_snapshot(pool_.view(), end_id);

    step_result s;
    s.target_rate = rate;
    s.published = after.ok - before.ok;
    double send_span = static_cast<double>(after.last_send_ns - t0) / 1e9;
    s.achieved_rate = n > 1 && send_span > 0 ? static_cast<double>(n - 1) / send_span : rate;
    s.expected = expected;
    s.received = after_totals.unique() - before_totals.unique();
    s.duplicates = after_totals.duplicates - before_totals.duplicates;
    s.out_of_order = after_totals.out_of_order - before_totals.out_of_order;
    for (const auto& v : pool_.view())
      if (auto it = v.snapshots.find(end_id); it != v.snapshots.end())
        s.latency.merge(histogram::from_json(it->second["latency"]));
    double span = static_cast<double>(after_totals.last_recv_ns - t0) / 1e9;
    s.deliveries_per_s = span > 0 ? static_cast<double>(s.received) / span : 0;
    auto p99 = static_cast<double>(s.latency.value_at_quantile(0.99)) / 1e6;
    s.verdict = step_verdict(s, p99, rate, o_.max_p99_ms,
                             after.failed + after.unknown > before.failed + before.unknown);
    s.pass = s.verdict.empty();
    say("find-max", std::to_string(static_cast<long>(rate)) + "/s: p99 " + std::to_string(p99) +
                      " ms, " + std::to_string(s.received) + "/" + std::to_string(s.expected) +
                      " delivered: " + (s.pass ? "ok" : s.verdict));
    r_.steps.push_back(std::move(s));
    if (!r_.steps.back().pass)
      break;
    r_.max_sustained_rate = rate;
    rate *= o_.step_factor;
  }
  mark_publish_end();
}

void scenario_phases::finish_phase() {
  pool_.broadcast({{"cmd", "finish"}});
  auto grace = mono_ns() + seconds_ns(20);
  pool_.wait_until(all_sent(&worker_view::result), grace);
  pool_.reap(mono_ns() + seconds_ns(5));
}

// -- waiting -------------------------------------------------------------------

bool scenario_phases::stopping() const {
  return interrupted_.load() || mono_ns() >= deadline_ns_;
}

bool scenario_phases::wait_workers(const worker_predicate& pred, std::int64_t deadline,
                                   const std::string& phase) {
  deadline = std::min(deadline, deadline_ns_);
  for (;;) {
    auto slice = std::min(deadline, mono_ns() + 1'000'000'000);
    if (pool_.wait_until(pred, slice, [this] { return interrupted_.load(); }))
      return true;
    if (mono_ns() >= deadline || interrupted_)
      return false;
    progress(phase);
  }
}

bool scenario_phases::wait_publisher(const std::string& phase) {
  for (;;) {
    auto slice = std::min(deadline_ns_, mono_ns() + 1'000'000'000);
    if (pub_.wait_idle(slice, &interrupted_))
      return true;
    if (stopping())
      return false;
    progress(phase);
  }
}

void scenario_phases::drain(std::uint64_t base, std::uint64_t expected, const std::string& phase) {
  auto last_value = sum_latest(pool_.view()).unique();
  auto last_change = mono_ns();
  auto last_print = mono_ns();
  while (!stopping()) {
    auto v = sum_latest(pool_.view()).unique();
    if (v - base >= expected)
      return;
    auto now = mono_ns();
    if (v != last_value) {
      last_value = v;
      last_change = now;
    } else if (now - last_change > seconds_ns(o_.drain_seconds)) {
      say(phase, "no delivery for " + std::to_string(o_.drain_seconds) +
                   " s: " + std::to_string(v - base) + "/" + std::to_string(expected) + " arrived");
      return;
    }
    if (now - last_print > 1'000'000'000) {
      last_print = now;
      say(phase,
          "waiting for deliveries: " + std::to_string(v - base) + "/" + std::to_string(expected));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void scenario_phases::sleep_ms(double ms) {
  auto until = std::min(deadline_ns_, mono_ns() + static_cast<std::int64_t>(ms * 1e6));
  while (!interrupted_ && mono_ns() < until)
    std::this_thread::sleep_for(
      std::chrono::milliseconds(std::min<std::int64_t>(50, (until - mono_ns()) / 1'000'000 + 1)));
}

scenario_phases::worker_predicate scenario_phases::snapshot_from_all(int id) {
  return [id](const std::vector<worker_view>& v) {
    return std::all_of(v.begin(), v.end(), [id](const worker_view& w) {
      return w.snapshots.count(id) > 0 || !w.alive;
    });
  };
}

// -- readings and messages -----------------------------------------------------

void scenario_phases::mark_publish_start() {
  auto s = monitor_.sample();
  for (std::size_t i = 0; i < r_.servers.size(); ++i)
    r_.servers[i].publish_start = s[i];
  publish_cpu0_ = sum_latest(pool_.view()).cpu_s;
}

void scenario_phases::mark_publish_end() {
  auto s = monitor_.sample();
  for (std::size_t i = 0; i < r_.servers.size(); ++i)
    r_.servers[i].publish_end = s[i];
  r_.generator_publish_cpu_s = sum_latest(pool_.view()).cpu_s - publish_cpu0_;
}

void scenario_phases::progress(const std::string& phase) {
  auto t = sum_latest(pool_.view());
  std::ostringstream s;
  s << t.established << "/" << o_.connections << " established, " << t.failed << " failed, "
    << t.open << " open";
  if (t.resuming)
    s << ", " << t.resuming << " resuming";
  if (phase != "connecting") {
    auto ps = pub_.stats();
    s << "; " << ps.sent << "/" << ps.requested << " published, " << t.received << " delivered";
  }
  say(phase, s.str());
}

void scenario_phases::say(const std::string& phase, const std::string& text) {
  if (o_.quiet)
    return;
  char head[48];
  std::snprintf(head, sizeof head, "[%6.1fs] ", static_cast<double>(mono_ns() - start_ns_) / 1e9);
  std::cerr << head << phase << ": " << text << std::endl;
}

} // namespace herald::loadtest
