// The run's throughput timeline (--throughput-svg): a sample every 250 ms
// on the run's I/O thread (deliveries received, publications written, open
// connections) and the moments the phases mark ("storm", "resumed"), drawn
// at the end by svg_plot.hpp's write_timeline_svg.
#pragma once

#include "loadtest/svg_plot.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace herald::loadtest {

class timeline_recorder {
public:
  /// Reads the counters of one sample (its `t_s` is filled in afterwards).
  using reader = std::function<timeline_sample()>;

  /// A recorder sampling on `ioc` once started; times are seconds since
  /// `start_ns` (CLOCK_MONOTONIC ns). `read` runs on the I/O thread.
  timeline_recorder(boost::asio::io_context& ioc, std::int64_t start_ns, reader read);

  /// Takes a sample now and then every 250 ms until the I/O loop stops.
  void start();
  /// Marks this moment with `what` (a vertical line on the plot). Any thread.
  void mark(const std::string& what);
  /// Writes the plot to `path`. Returns false when the file cannot be
  /// written. Any thread.
  bool write_svg(const std::string& path, const std::string& title) const;

private:
  void tick();
  double seconds_since_start() const noexcept;

  boost::asio::steady_timer timer_;
  std::int64_t start_ns_;
  reader read_;
  mutable std::mutex mu_;
  std::vector<timeline_sample> samples_;
  std::vector<timeline_marker> markers_;
};

} // namespace herald::loadtest
