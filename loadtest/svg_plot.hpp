// A latency percentile plot written as a self-contained SVG file (no
// library): latency (ms, linear) against percentile on a log scale of
// 1/(1 - p), the usual way to show tails (50 %, 90 %, 99 %, 99.9 % ...).
#pragma once

#include "loadtest/histogram.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace herald::loadtest {

/// One curve: a label and a histogram of nanoseconds.
using plot_series = std::pair<std::string, const histogram*>;

/// Renders the plot as SVG text. Empty histograms are skipped.
std::string render_percentile_svg(const std::string& title, const std::vector<plot_series>& series);

/// Writes render_percentile_svg to `path`. Returns false when the file
/// cannot be written.
bool write_percentile_svg(const std::string& path, const std::string& title,
                          const std::vector<plot_series>& series);

/// One sample of a run's timeline, taken every 250 ms (timeline_recorder.hpp).
struct timeline_sample {
  double t_s = 0;              ///< seconds since the run started
  std::uint64_t received = 0;  ///< deliveries received so far (all subscribers)
  std::uint64_t published = 0; ///< publications written so far
  std::uint64_t open = 0;      ///< subscriber connections open
};

/// A marked moment on the timeline (e.g. "storm" at the drop), seconds
/// since the run started.
using timeline_marker = std::pair<std::string, double>;

/// Renders throughput over time as SVG: deliveries/s and publications/s
/// (left axis, per second, from the differences of consecutive samples)
/// and open connections (right axis), with vertical marker lines. Fewer
/// than two samples give a plot with axes only.
std::string render_timeline_svg(const std::string& title,
                                const std::vector<timeline_sample>& samples,
                                const std::vector<timeline_marker>& markers);

/// Writes render_timeline_svg to `path`. Returns false when the file cannot
/// be written.
bool write_timeline_svg(const std::string& path, const std::string& title,
                        const std::vector<timeline_sample>& samples,
                        const std::vector<timeline_marker>& markers);

} // namespace herald::loadtest
