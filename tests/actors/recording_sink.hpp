// A frame_sink that records what a connection actor sends, for actor tests.
// The same behaviour is covered end to end against real sockets in tests/e2e.
#pragma once

#include "net/frame_sink.hpp"

#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace herald::test {

class recording_sink : public net::frame_sink {
public:
  void deliver(std::string prefix, net::frame body, std::int64_t = 0) override {
    std::lock_guard<std::mutex> g{mtx};
    prefixes.push_back(std::move(prefix));
    bodies.push_back(*body);
  }
  void close(net::close_request req) override {
    std::lock_guard<std::mutex> g{mtx};
    if (!closed)
      closed = std::move(req);
  }
  std::mutex mtx;
  std::vector<std::string> prefixes;
  std::vector<std::string> bodies;
  std::optional<net::close_request> closed;
};

} // namespace herald::test
