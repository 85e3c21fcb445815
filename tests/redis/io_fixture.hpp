// io_fixture: a single-threaded io_context that the test thread runs in
// slices, so a test can wait for a condition with a deadline and never
// hangs. Everything posted to `ex` runs on the test thread.
#pragma once

#include "net/asio.hpp"
#include "net/redis/connection.hpp"
#include "net/redis/url.hpp"

#include <chrono>
#include <stdexcept>
#include <string>

namespace herald::test {

namespace asio = boost::asio;

struct io_fixture {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  asio::any_io_executor ex{io.get_executor()};

  /// Runs the io_context until `pred()` holds or `timeout` passes.
  /// @returns pred() at the end.
  template <class Pred>
  bool run_until(Pred pred, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
      if (std::chrono::steady_clock::now() >= deadline)
        return pred();
      io.run_for(std::chrono::milliseconds(2));
    }
    return true;
  }

  /// Runs the io_context for `d`.
  void run_for(std::chrono::milliseconds d) {
    auto deadline = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < deadline)
      io.run_until(deadline);
  }
};

/// Options for tests: short backoff and timeouts so every case stays fast.
inline net::redis::connection_options test_options(const std::string& url_text) {
  net::redis::connection_options o;
  std::string error;
  if (!net::redis::parse_url(url_text, o.target, error))
    throw std::runtime_error(error);
  o.min_backoff = std::chrono::milliseconds(20);
  o.max_backoff = std::chrono::milliseconds(300);
  o.connect_timeout = std::chrono::milliseconds(500);
  o.command_timeout = std::chrono::milliseconds(2000);
  o.heartbeat_interval = std::chrono::milliseconds(200);
  o.heartbeat_timeout = std::chrono::milliseconds(500);
  return o;
}

} // namespace herald::test
