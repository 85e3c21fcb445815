// server: owns the I/O shards, the actor system and everything wired between
// them; runs until SIGINT or SIGTERM, then shuts down in order (stop
// accepting, close connections, stop actors, join threads).
#pragma once

#include "app/config.hpp"

namespace herald::app {

/// Runs the server with `cfg` until a signal arrives.
/// @returns the process exit code (0 after a clean shutdown, 1 when it
///          could not start, e.g. the port is taken).
int run_server(config& cfg);

} // namespace herald::app
