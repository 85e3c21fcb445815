#include "redis_server.hpp"

#include <hiredis/hiredis.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace herald::test {

namespace {

using namespace std::chrono_literals;

std::string server_binary() {
  if (const char* env = std::getenv("HERALD_REDIS_SERVER"); env != nullptr && *env != '\0')
    return env;
  return HERALD_REDIS_SERVER_PATH;
}

} // namespace

std::uint16_t redis_server::free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error(std::string("bind: ") + std::strerror(errno));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

redis_server::redis_server(std::vector<std::string> extra_args, std::uint16_t port)
  : extra_args_(std::move(extra_args)),
    port_(port) {
  for (std::size_t i = 0; i + 1 < extra_args_.size(); ++i)
    if (extra_args_[i] == "--requirepass")
      password_ = extra_args_[i + 1];
  if (port_ == 0)
    port_ = free_port();
  char tmpl[] = "/tmp/herald-redis-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr)
    throw std::runtime_error(std::string{"mkdtemp: "} + std::strerror(errno));
  dir_ = tmpl;
  start();
}

redis_server::~redis_server() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  for (const char* f : {"/dump.rdb", "/temp-dump.rdb"})
    ::unlink((dir_ + f).c_str());
  ::rmdir(dir_.c_str()); // fails harmlessly if Redis left something else
}

std::string redis_server::url() const {
  return "redis://127.0.0.1:" + std::to_string(port_);
}

void redis_server::start() {
  if (pid_ > 0)
    return;
  // Right after a kill the port can briefly still be taken; retry a few times.
  for (int attempt = 0; attempt < 3; ++attempt) {
    spawn();
    if (wait_ready(5s))
      return;
    kill();
    std::this_thread::sleep_for(200ms);
  }
  throw std::runtime_error("redis-server did not start on port " + std::to_string(port_));
}

void redis_server::spawn() {
  std::vector<std::string> args = {
    server_binary(), "--port", std::to_string(port_), "--bind", "127.0.0.1", "--save", "",
    "--appendonly",  "no",     "--daemonize",         "no",     "--dir",     dir_};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  bool keep_log = std::getenv("HERALD_REDIS_TEST_LOG") != nullptr;
  pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(1);
    int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      ::dup2(devnull, 0);
      if (!keep_log) {
        ::dup2(devnull, 1);
        ::dup2(devnull, 2);
      }
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  pid_ = pid;
  frozen_ = false;
}

bool redis_server::wait_ready(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1; // exited (port taken, bad argument, ...)
      return false;
    }
    // Any answer (PONG, or NOAUTH with --requirepass) means it is serving.
    if (!command({"PING"}).is_disconnected())
      return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

void redis_server::wait_exit(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (pid_ > 0) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      pid_ = -1;
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(10ms);
  }
}

void redis_server::stop() {
  if (pid_ <= 0)
    return;
  if (frozen_)
    thaw();
  ::kill(pid_, SIGTERM);
  wait_exit(5s);
}

void redis_server::kill() {
  if (pid_ <= 0)
    return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  frozen_ = false;
}

void redis_server::freeze() {
  if (pid_ > 0 && !frozen_) {
    ::kill(pid_, SIGSTOP);
    frozen_ = true;
  }
}

void redis_server::thaw() {
  if (pid_ > 0 && frozen_) {
    ::kill(pid_, SIGCONT);
    frozen_ = false;
  }
}

net::redis::reply redis_server::command(const std::vector<std::string>& args,
                                        const std::string& password) const {
  timeval tv{2, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
  if (c == nullptr || c->err != 0) {
    if (c != nullptr)
      redisFree(c);
    return net::redis::reply::disconnected();
  }
  redisSetTimeout(c, tv);
  auto run = [c](const std::vector<std::string>& a) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const auto& s : a) {
      argv.push_back(s.data());
      lens.push_back(s.size());
    }
    auto* r = static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
    if (r == nullptr)
      return net::redis::reply::disconnected();
    auto copy = net::redis::copy_reply(*r);
    freeReplyObject(r);
    return copy;
  };
  const std::string& pw = password.empty() ? password_ : password;
  if (!pw.empty() && !(args.size() == 1 && args[0] == "PING")) {
    auto auth = run({"AUTH", pw});
    if (auth.is_disconnected() || auth.is_error()) {
      redisFree(c);
      return auth;
    }
  }
  auto result = run(args);
  redisFree(c);
  return result;
}

} // namespace herald::test
