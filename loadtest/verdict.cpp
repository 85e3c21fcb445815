#include "loadtest/verdict.hpp"

#include "loadtest/worker_totals.hpp"

#include <algorithm>

namespace herald::loadtest {

std::uint64_t expected_deliveries(const publisher_stats& now, const publisher_stats* before,
                                  const reading_subscriptions& subs) {
  if (now.broadcast) {
    auto ok = now.ok - (before ? before->ok : 0);
    return ok * subs.connections;
  }
  std::uint64_t e = 0;
  for (std::size_t c = 0; c < subs.per_channel.size() && c < now.ok_per_channel.size(); ++c) {
    auto ok = now.ok_per_channel[c] - (before ? before->ok_per_channel[c] : 0);
    e += ok * subs.per_channel[c];
  }
  return e;
}

std::string step_verdict(const step_result& s, double p99_ms, double rate, double max_p99_ms,
                         bool publish_errors) {
  if (s.received < s.expected)
    return "loss";
  if (p99_ms > max_p99_ms)
    return "p99 over " + std::to_string(static_cast<long>(max_p99_ms)) + " ms";
  if (s.achieved_rate < 0.9 * rate)
    return "publisher fell behind";
  if (publish_errors)
    return "publish errors";
  if (s.duplicates || s.out_of_order)
    return "duplicates/reordering";
  return {};
}

void assemble(run_result& r, const std::vector<worker_view>& views, const publisher_stats& pub,
              const reading_subscriptions& subs, double parent_cpu_s) {
  for (std::size_t i = 0; i < views.size(); ++i) {
    const auto& res = views[i].result;
    if (res.is_null()) {
      r.problems.push_back("worker " + std::to_string(i) + " gave no result");
      continue;
    }
    r.latency.merge(histogram::from_json(res["latency"]));
    r.connect.merge(histogram::from_json(res["connect"]));
    r.reconnect.merge(histogram::from_json(res["reconnect"]));
    for (const auto& [k, v] : res["failures"].items())
      r.failures[k] += v.get<std::uint64_t>();
    for (const auto& [k, v] : res["notices"].items())
      r.notices[k] += v.get<std::uint64_t>();
    r.slow += res.value("slow", std::uint64_t{0});
    r.slow_closed_by_server += res.value("slow_closed_by_server", std::uint64_t{0});
    r.no_position += res.value("no_position", std::uint64_t{0});
    r.worker_rss_bytes += res.value("rss_bytes", std::uint64_t{0});
    if (!views[i].storm.is_null()) {
      double s = static_cast<double>(views[i].storm.value("end_ns", std::int64_t{0}) -
                                     views[i].storm.value("start_ns", std::int64_t{0})) /
                 1e9;
      r.storm_s = std::max(r.storm_s, s);
    }
  }
  auto t = sum_latest(views);
  r.established = t.established;
  r.failed = t.failed;
  r.dropped = t.dropped;
  r.resumed = t.resumed;
  r.resume_failed = t.resume_failed;
  r.received = t.received;
  r.duplicates = t.duplicates;
  r.out_of_order = t.out_of_order;
  r.offset_gaps = t.offset_gaps;
  r.gap_notices = t.gap_notices;
  r.unparsed = t.unparsed;
  r.generator_cpu_s = parent_cpu_s + t.cpu_s;

  r.pub = pub;
  r.publish_s =
    r.pub.sent > 1 ? static_cast<double>(r.pub.last_send_ns - r.pub.first_send_ns) / 1e9 : 0;
  r.achieved_rate = r.publish_s > 0 ? static_cast<double>(r.pub.sent - 1) / r.publish_s
                                    : static_cast<double>(r.pub.sent);
  if (r.pub.ok && r.pub.last_ok_ns > r.pub.first_send_ns)
    r.acked_rate = static_cast<double>(r.pub.ok) /
                   (static_cast<double>(r.pub.last_ok_ns - r.pub.first_send_ns) / 1e9);
  r.expected = expected_deliveries(r.pub, nullptr, subs);
  r.loss = r.expected > t.unique() ? r.expected - t.unique() : 0;
  if (t.received && r.pub.first_send_ns && t.last_recv_ns > r.pub.first_send_ns)
    r.deliveries_per_s = static_cast<double>(t.received) /
                         (static_cast<double>(t.last_recv_ns - r.pub.first_send_ns) / 1e9);
}

void judge(run_result& r, const options& o, bool interrupted) {
  auto& p = r.problems;
  auto n = [](std::uint64_t v) { return std::to_string(v); };
  if (interrupted)
    p.push_back("interrupted");
  if (r.established == 0)
    p.push_back("no connection was established");
  if (r.failed)
    p.push_back(n(r.failed) + " connection attempts failed");
  if (r.dropped)
    p.push_back(n(r.dropped) + " connections were dropped by the server");
  if (r.duplicates)
    p.push_back(n(r.duplicates) + " duplicate deliveries");
  if (r.out_of_order)
    p.push_back(n(r.out_of_order) + " out-of-order deliveries");
  if (r.resume_failed)
    p.push_back(n(r.resume_failed) + " connections could not resume");
  if (r.pub.offset_anomalies)
    p.push_back(n(r.pub.offset_anomalies) + " publish answers with non-consecutive offsets");
  if (o.find_max) {
    if (r.steps.empty() || !r.steps.front().pass)
      p.push_back("the first --find-max step already failed (lower --rate)");
    return; // the last step fails by design: loss there is the measurement
  }
  if (r.loss)
    p.push_back(n(r.loss) + " deliveries lost");
  if (r.gap_notices)
    p.push_back(n(r.gap_notices) + " gap notices from the server");
  if (r.pub.failed || r.pub.unknown)
    p.push_back(n(r.pub.failed + r.pub.unknown) + " publications failed or were not answered");
  if (o.scen != scenario::idle && r.pub.ok < o.publications)
    p.push_back("only " + n(r.pub.ok) + " of " + n(o.publications) + " publications were accepted");
}

} // namespace herald::loadtest
