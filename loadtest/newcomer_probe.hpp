// Newcomers during a reconnect storm: while every existing client drops and
// resumes, is the server still accepting NEW subscribers, and how fast?
//
// A newcomer_probe runs on its own thread and, every `interval_ms`, opens one
// fresh TCP connection to `target`, sends `GET /v1/sse?channel=<channel>`
// (WHATWG SSE over HTTP/1.1) and waits for the response head and the first
// complete event (Herald writes `retry:` and a `herald.cursor` event at once,
// issue #14), then closes. One attempt at a time, so it holds at most one
// file descriptor. The channel is outside the load plan, so the newcomers
// never count in the delivery figures.
#pragma once

#include "loadtest/histogram.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace herald::loadtest {

struct newcomer_figures {
  std::uint64_t attempted = 0; ///< connections opened
  std::uint64_t accepted = 0;  ///< answered 200 with a first event within the timeout
  std::map<std::string, std::uint64_t> failures; ///< why the others failed
  histogram accept_ns; ///< connect() start -> first event read, nanoseconds
};

class newcomer_probe {
public:
  /// `target` is "a.b.c.d:port" (IPv4); `interval_ms` the pause between the
  /// end of one attempt and the start of the next (ms); `timeout_ms` bounds
  /// each attempt (connect + head + first event; ms). Nothing starts before
  /// start().
  newcomer_probe(std::string target, std::string channel, int interval_ms, int timeout_ms);
  ~newcomer_probe(); ///< stops and joins
  newcomer_probe(const newcomer_probe&) = delete;
  newcomer_probe& operator=(const newcomer_probe&) = delete;

  /// Starts the thread (once). Errors of single attempts are counted in
  /// figures().failures, never thrown.
  void start();
  /// Stops after the attempt under way (at most timeout_ms) and joins.
  void stop();
  /// A copy of the figures so far (thread-safe).
  newcomer_figures figures() const;

private:
  void run();
  /// One attempt: "" when accepted (and `took_ns` set), else why not.
  std::string attempt(std::int64_t& took_ns);

  std::string host_;
  unsigned short port_ = 0;
  std::string channel_;
  int interval_ms_;
  int timeout_ms_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  newcomer_figures figures_;
};

} // namespace herald::loadtest
