#include "loadtest/worker_pool.hpp"

#include "loadtest/clock.hpp"
#include "loadtest/worker.hpp"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>
#include <system_error>
#include <thread>

namespace herald::loadtest {

namespace asio = boost::asio;

struct worker_pool::child {
  explicit child(asio::io_context& ioc)
    : reports(ioc) {}
  pid_t pid = -1;
  int control_fd = -1; // write end of the worker's stdin
  asio::posix::stream_descriptor reports;
  std::string buf;
  bool reaped = false;
};

worker_pool::worker_pool(asio::io_context& ioc)
  : ioc_(ioc) {}

worker_pool::~worker_pool() {
  for (auto& c : children_) {
    if (!c->reaped && c->pid > 0) {
      ::kill(c->pid, SIGKILL);
      ::waitpid(c->pid, nullptr, 0);
      c->reaped = true;
    }
    if (c->control_fd >= 0)
      ::close(c->control_fd);
  }
}

namespace {
[[noreturn]] void throw_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

} // namespace

void worker_pool::start(const std::string& exe, const std::vector<nlohmann::json>& configs) {
  pid_t parent = ::getpid();
  for (std::size_t i = 0; i < configs.size(); ++i) {
    int control[2];
    int reports[2];
    if (::pipe2(control, O_CLOEXEC) != 0 || ::pipe2(reports, O_CLOEXEC) != 0)
      throw_errno("pipe");
    pid_t pid = ::fork();
    if (pid < 0)
      throw_errno("fork");
    if (pid == 0) {
      // Child: stdin = control (read end), fd 3 = reports (write end).
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent)
        ::_exit(3);
      ::dup2(control[0], 0);
      if (reports[1] == 3)
        ::fcntl(3, F_SETFD, 0); // already fd 3: only drop close-on-exec
      else
        ::dup2(reports[1], 3);
      const char* argv[] = {exe.c_str(), "--worker", nullptr};
      ::execv(exe.c_str(), const_cast<char* const*>(argv));
      ::_exit(3);
    }
    ::close(control[0]);
    ::close(reports[1]);
    auto c = std::make_unique<child>(ioc_);
    c->pid = pid;
    c->control_fd = control[1];
    c->reports.assign(reports[0]);
    {
      std::lock_guard lock(mu_);
      worker_view v;
      v.pid = pid;
      views_.push_back(v);
    }
    children_.push_back(std::move(c));
    if (!write_all(children_.back()->control_fd, configs[i].dump() + "\n"))
      throw_errno("write to worker");
    asio::post(ioc_, [this, i] { read_reports(i); });
  }
}

void worker_pool::read_reports(std::size_t i) {
  auto& c = *children_[i];
  asio::async_read_until(c.reports, asio::dynamic_buffer(c.buf), '\n',
                         [this, i](const boost::system::error_code& ec, std::size_t n) {
                           auto& ch = *children_[i];
                           if (ec) {
                             {
                               std::lock_guard lock(mu_);
                               views_[i].alive = false;
                             }
                             cv_.notify_all();
                             return;
                           }
                           std::string line = ch.buf.substr(0, n);
                           ch.buf.erase(0, n);
                           on_line(i, line);
                           read_reports(i);
                         });
}

void worker_pool::on_line(std::size_t i, const std::string& line) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object())
    return;
  auto type = j.value("type", std::string{});
  {
    std::lock_guard lock(mu_);
    auto& v = views_[i];
    if (type == "progress")
      v.progress = std::move(j);
    else if (type == "ready")
      v.ready = std::move(j);
    else if (type == "storm_done")
      v.storm = std::move(j);
    else if (type == "snapshot") {
      int id = j.value("id", 0); // before the move below
      v.snapshots[id] = std::move(j);
    } else if (type == "result")
      v.result = std::move(j);
  }
  cv_.notify_all();
}

void worker_pool::broadcast(const nlohmann::json& cmd) {
  auto line = cmd.dump() + "\n";
  for (auto& c : children_)
    if (c->control_fd >= 0 && !write_all(c->control_fd, line)) {
      ::close(c->control_fd);
      c->control_fd = -1;
    }
}

bool worker_pool::wait_until(const std::function<bool(const std::vector<worker_view>&)>& pred,
                             std::int64_t deadline_ns, const std::function<bool()>& stop) {
  std::unique_lock lock(mu_);
  while (!pred(views_)) {
    if (mono_ns() >= deadline_ns || (stop && stop()))
      return false;
    cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
  return true;
}

std::vector<worker_view> worker_pool::view() const {
  std::lock_guard lock(mu_);
  return views_;
}

void worker_pool::reap(std::int64_t deadline_ns) {
  for (auto& c : children_)
    if (c->control_fd >= 0) {
      ::close(c->control_fd);
      c->control_fd = -1;
    }
  for (std::size_t i = 0; i < children_.size(); ++i) {
    auto& c = *children_[i];
    if (c.reaped)
      continue;
    int status = 0;
    for (;;) {
      auto r = ::waitpid(c.pid, &status, WNOHANG);
      if (r == c.pid || (r < 0 && errno != EINTR))
        break;
      if (mono_ns() >= deadline_ns) {
        ::kill(c.pid, SIGKILL);
        ::waitpid(c.pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    c.reaped = true;
    std::lock_guard lock(mu_);
    views_[i].exit_status = status;
  }
}

} // namespace herald::loadtest
