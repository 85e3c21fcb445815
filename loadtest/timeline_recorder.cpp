#include "loadtest/timeline_recorder.hpp"

#include "loadtest/clock.hpp"

#include <boost/asio/post.hpp>

#include <chrono>

namespace herald::loadtest {

namespace asio = boost::asio;

timeline_recorder::timeline_recorder(asio::io_context& ioc, std::int64_t start_ns, reader read)
  : timer_(ioc),
    start_ns_(start_ns),
    read_(std::move(read)) {}

void timeline_recorder::start() {
  asio::post(timer_.get_executor(), [this] { tick(); });
}

void timeline_recorder::mark(const std::string& what) {
  std::lock_guard lock(mu_);
  markers_.emplace_back(what, seconds_since_start());
}

bool timeline_recorder::write_svg(const std::string& path, const std::string& title) const {
  std::lock_guard lock(mu_);
  return write_timeline_svg(path, title, samples_, markers_);
}

void timeline_recorder::tick() {
  auto s = read_();
  {
    std::lock_guard lock(mu_);
    s.t_s = seconds_since_start();
    samples_.push_back(s);
  }
  timer_.expires_after(std::chrono::milliseconds(250));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec)
      tick();
  });
}

double timeline_recorder::seconds_since_start() const noexcept {
  return static_cast<double>(mono_ns() - start_ns_) / 1e9;
}

} // namespace herald::loadtest
