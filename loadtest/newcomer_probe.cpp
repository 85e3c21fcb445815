#include "loadtest/newcomer_probe.hpp"

#include "loadtest/clock.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace herald::loadtest {

newcomer_probe::newcomer_probe(std::string target, std::string channel, int interval_ms,
                               int timeout_ms)
  : channel_(std::move(channel)),
    interval_ms_(interval_ms),
    timeout_ms_(timeout_ms) {
  auto colon = target.rfind(':');
  host_ = target.substr(0, colon);
  port_ = static_cast<unsigned short>(std::stoul(target.substr(colon + 1)));
}

newcomer_probe::~newcomer_probe() {
  stop();
}

void newcomer_probe::start() {
  if (!thread_.joinable())
    thread_ = std::thread([this] { run(); });
}

void newcomer_probe::stop() {
  stop_ = true;
  if (thread_.joinable())
    thread_.join();
}

newcomer_figures newcomer_probe::figures() const {
  std::lock_guard lock(mu_);
  return figures_;
}

void newcomer_probe::run() {
  while (!stop_) {
    std::int64_t took = 0;
    auto why = attempt(took);
    {
      std::lock_guard lock(mu_);
      ++figures_.attempted;
      if (why.empty()) {
        ++figures_.accepted;
        figures_.accept_ns.record(static_cast<std::uint64_t>(took));
      } else {
        ++figures_.failures[why];
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms_));
  }
}

namespace {

struct fd_guard {
  int fd;
  ~fd_guard() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// Waits for `events` on `fd` until `deadline_ns` (mono); false on timeout.
bool wait_for(int fd, short events, std::int64_t deadline_ns) {
  for (;;) {
    auto left_ms = (deadline_ns - mono_ns()) / 1'000'000;
    if (left_ms <= 0)
      return false;
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(left_ms));
    if (n > 0)
      return true;
    if (n < 0 && errno != EINTR)
      return false;
  }
}

} // namespace

std::string newcomer_probe::attempt(std::int64_t& took_ns) {
  auto t0 = mono_ns();
  auto deadline = t0 + static_cast<std::int64_t>(timeout_ms_) * 1'000'000;
  fd_guard s{::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
  if (s.fd < 0)
    return std::string("socket: ") + std::strerror(errno);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port_);
  if (::inet_pton(AF_INET, host_.c_str(), &a.sin_addr) != 1)
    return "bad target address";
  if (::connect(s.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (errno != EINPROGRESS)
      return std::string("connect: ") + std::strerror(errno);
    if (!wait_for(s.fd, POLLOUT, deadline))
      return "connect timeout";
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0)
      return std::string("connect: ") + std::strerror(err);
  }
  std::string req = "GET /v1/sse?channel=" + channel_ + " HTTP/1.1\r\nHost: " + host_ + ":" +
                    std::to_string(port_) + "\r\nAccept: text/event-stream\r\n\r\n";
  if (::send(s.fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size()))
    return "send failed";
  std::string got;
  char buf[4096];
  for (;;) {
    if (!wait_for(s.fd, POLLIN, deadline))
      return "no first event in time";
    auto n = ::recv(s.fd, buf, sizeof buf, 0);
    if (n == 0)
      return "closed by the server";
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR)
        continue;
      return std::string("recv: ") + std::strerror(errno);
    }
    got.append(buf, static_cast<std::size_t>(n));
    auto head_end = got.find("\r\n\r\n");
    if (head_end == std::string::npos)
      continue;
    if (got.compare(0, 12, "HTTP/1.1 200") != 0)
      return "status " + got.substr(9, 3);
    // The first complete event: an `event:` line and the blank line ending it.
    auto event = got.find("event:", head_end + 4);
    if (event != std::string::npos && got.find("\n\n", event) != std::string::npos) {
      took_ns = mono_ns() - t0;
      return {};
    }
  }
}

} // namespace herald::loadtest
