#include "loadtest/server_monitor.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <chrono>

namespace herald::loadtest {

namespace asio = boost::asio;

server_monitor::server_monitor(asio::io_context& ioc, std::vector<int> pids)
  : timer_(ioc),
    pids_(std::move(pids)),
    peaks_(pids_.size(), 0) {}

void server_monitor::start() {
  if (pids_.empty())
    return;
  asio::post(timer_.get_executor(), [this] { tick(); });
}

void server_monitor::stop() {
  std::lock_guard lock(mu_);
  stopped_ = true;
}

std::vector<std::uint64_t> server_monitor::peaks() const {
  std::lock_guard lock(mu_);
  return peaks_;
}

std::vector<proc_sample> server_monitor::sample(bool count_files) {
  std::vector<proc_sample> out;
  for (int pid : pids_)
    out.push_back(sample_process(pid, count_files));
  std::lock_guard lock(mu_);
  for (std::size_t i = 0; i < out.size(); ++i)
    peaks_[i] = std::max(peaks_[i], out[i].rss_bytes);
  return out;
}

void server_monitor::tick() {
  {
    std::lock_guard lock(mu_);
    if (stopped_)
      return;
  }
  sample();
  timer_.expires_after(std::chrono::milliseconds(500));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec)
      tick();
  });
}

} // namespace herald::loadtest
