// Where a finished run's report goes, as the options ask: the table (or
// JSON with --json) on standard output, --json-file, the latency percentile
// plot (--svg: the run, or one curve per --find-max step) and the
// throughput plot (--throughput-svg). A file that cannot be written is said
// on standard error and does not change the exit status.
#pragma once

#include "loadtest/options.hpp"
#include "loadtest/report.hpp"
#include "loadtest/timeline_recorder.hpp"

namespace herald::loadtest {

/// Writes the report of `r` (assembled and judged) to standard output and
/// to the files `o` names; `timeline` gives the throughput plot.
void write_outputs(const options& o, const run_result& r, const timeline_recorder& timeline);

} // namespace herald::loadtest
