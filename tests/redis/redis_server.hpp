// redis_server: a real redis-server for one test, on a free loopback port.
// Started in the constructor, stopped by PID in the destructor (also when
// the test fails and throws). Can be killed, restarted on the same port and
// frozen (SIGSTOP / SIGCONT). The child gets PR_SET_PDEATHSIG, so it also
// dies if the test process crashes.
//
// The binary is $HERALD_REDIS_SERVER, else the redis-server found by CMake.
// Set $HERALD_REDIS_TEST_LOG=1 to keep the server's output on stderr.
// Not thread-safe: use it from the test's thread.
#pragma once

#include "net/redis/reply.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace herald::test {

class redis_server {
public:
  /// Starts a server with `extra_args` (for example {"--requirepass", "pw"})
  /// on `port` (0: a free port) and waits until it answers. Throws
  /// std::runtime_error when it does not come up within 5 s.
  explicit redis_server(std::vector<std::string> extra_args = {}, std::uint16_t port = 0);
  ~redis_server();
  redis_server(const redis_server&) = delete;
  redis_server& operator=(const redis_server&) = delete;

  /// Starts again on the same port (after kill() or stop()).
  void start();
  /// SIGTERM, wait up to 5 s, then SIGKILL.
  void stop();
  /// SIGKILL and wait.
  void kill();
  /// SIGSTOP / SIGCONT: the process stays, its sockets stay open, nothing
  /// is answered (what a hung server looks like to clients).
  void freeze();
  void thaw();

  bool running() const noexcept { return pid_ > 0; }
  pid_t pid() const noexcept { return pid_; }
  std::uint16_t port() const noexcept { return port_; }
  /// "redis://127.0.0.1:<port>"
  std::string url() const;

  /// Runs one command on a fresh blocking connection (2 s timeouts) and
  /// returns the copied reply; reply::disconnected() when the server does
  /// not answer. AUTHs first when `password` is not empty.
  net::redis::reply command(const std::vector<std::string>& args,
                            const std::string& password = {}) const;

  /// A port that was free a moment ago (bind to port 0, read it, close).
  static std::uint16_t free_port();

private:
  void spawn();
  bool wait_ready(std::chrono::milliseconds timeout);
  void wait_exit(std::chrono::milliseconds timeout);

  std::vector<std::string> extra_args_;
  std::string password_;
  /// Its own --dir (a fresh temporary directory, removed with it): a
  /// replica's full sync writes dump.rdb there even with --save '', and a
  /// shared directory would let another server load that stale dump.
  std::string dir_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
  bool frozen_ = false;
};

} // namespace herald::test
