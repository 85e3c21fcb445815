// The parent process of a run: starts the workers, waits for the
// connections, publishes according to the scenario, waits for the
// deliveries, samples the servers, and reports. The phases are in
// scenario_phases.hpp, the judging in verdict.hpp, the outputs in
// run_output.hpp.
#pragma once

#include "loadtest/options.hpp"

namespace herald::loadtest {

/// Runs the scenario `o` (already finalized) and prints the report.
/// Returns the exit status: 0 pass, 1 a check failed, 3 runtime error.
int run_controller(const options& o);

} // namespace herald::loadtest
