// From counts to a verdict: how many deliveries a run expects, the run's
// figures added up from the workers' final results and the publisher's
// statistics, the problems that fail a run, and the verdict on one
// --find-max step. Plain functions of their arguments (no I/O, no clock),
// called by the controller and the phases on the controller's thread.
#pragma once

#include "loadtest/options.hpp"
#include "loadtest/publisher.hpp"
#include "loadtest/report.hpp"
#include "loadtest/worker_pool.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace herald::loadtest {

/// The reading (not slow) subscriptions once the connections are up, from
/// the workers' ready reports: what each publication should reach.
struct reading_subscriptions {
  std::vector<std::uint64_t> per_channel; ///< reading subscriptions, by channel id
  std::uint64_t connections = 0;          ///< reading connections
};

/// Deliveries expected for the publications accepted (answered 200) in
/// `now`, or since `before` when given: per channel, accepted x reading
/// subscriptions; against a server that ignores channels (`broadcast`),
/// accepted x reading connections.
std::uint64_t expected_deliveries(const publisher_stats& now, const publisher_stats* before,
                                  const reading_subscriptions& subs);

/// Why a --find-max step fails, or "" when it passes; the first that holds
/// of: loss, p99 over `max_p99_ms`, a publisher below 90 % of `rate`,
/// publish errors, duplicates or reordering.
/// @param s              the step, with `received`, `expected`, `achieved_rate`,
///                       `duplicates` and `out_of_order` set
/// @param p99_ms         the step's p99 latency, milliseconds
/// @param rate           the rate asked for, publications per second
/// @param max_p99_ms     the bound on p99 (--max-p99-ms), milliseconds
/// @param publish_errors whether publications failed or went unanswered in the step
std::string step_verdict(const step_result& s, double p99_ms, double rate, double max_p99_ms,
                         bool publish_errors);

/// Fills `r`'s measured figures: histograms, failures and notices merged
/// from the workers' results (a worker without one is a problem), the
/// summed counters, the publisher's statistics `pub` and its rates,
/// expected deliveries and loss, deliveries per second, and the generator's
/// CPU (`parent_cpu_s`, seconds, plus the workers').
void assemble(run_result& r, const std::vector<worker_view>& views, const publisher_stats& pub,
              const reading_subscriptions& subs, double parent_cpu_s);

/// Appends to `r.problems` every check the assembled run fails (options `o`;
/// `interrupted` when a signal stopped it). An empty list is a pass.
void judge(run_result& r, const options& o, bool interrupted);

} // namespace herald::loadtest
