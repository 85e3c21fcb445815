// A latency percentile plot written as a self-contained SVG file (no
// library): latency (ms, linear) against percentile on a log scale of
// 1/(1 - p), the usual way to show tails (50 %, 90 %, 99 %, 99.9 % ...).
#pragma once

#include "loadtest/histogram.hpp"

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

} // namespace herald::loadtest
