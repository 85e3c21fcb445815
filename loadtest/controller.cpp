// The parent process of a run: raises the file limit, catches SIGINT and
// SIGTERM, writes the run's description into the result, splits the
// connections over the workers, wires the pieces (the I/O thread, the
// server monitor, the worker pool, the publisher, the throughput timeline),
// runs the scenario's phases (scenario_phases.hpp), then assembles, judges
// (verdict.hpp) and writes the report (run_output.hpp).
#include "loadtest/controller.hpp"

#include "loadtest/channel_plan.hpp"
#include "loadtest/clock.hpp"
#include "loadtest/proc_sampler.hpp"
#include "loadtest/publisher.hpp"
#include "loadtest/report.hpp"
#include "loadtest/run_output.hpp"
#include "loadtest/scenario_phases.hpp"
#include "loadtest/server_monitor.hpp"
#include "loadtest/timeline_recorder.hpp"
#include "loadtest/verdict.hpp"
#include "loadtest/worker.hpp"
#include "loadtest/worker_pool.hpp"
#include "loadtest/worker_totals.hpp"

#include <boost/asio/executor_work_guard.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <ctime>
#include <iostream>
#include <random>
#include <thread>

namespace herald::loadtest {

namespace asio = boost::asio;

namespace {

std::atomic<bool> interrupted{false};

extern "C" void on_signal(int) {
  interrupted = true;
}

std::string self_exe() {
  char buf[4096];
  auto n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    return {};
  return std::string(buf, static_cast<std::size_t>(n));
}

void raise_file_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
  return buf;
}

/// Runs the io_context on its own thread for as long as it lives.
class io_thread {
public:
  io_thread()
    : guard_(asio::make_work_guard(ioc)),
      thread_([this] { ioc.run(); }) {}
  ~io_thread() { stop(); }
  /// Stops the loop and joins the thread (idempotent). Objects with
  /// handlers on `ioc` may be destroyed safely afterwards.
  void stop() {
    if (!thread_.joinable())
      return;
    guard_.reset();
    ioc.stop();
    thread_.join();
  }
  asio::io_context ioc{1};

private:
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::thread thread_;
};

class run {
public:
  explicit run(const options& o)
    : o_(o) {}

  int execute() {
    start_ns_ = mono_ns();
    auto deadline_ns = start_ns_ + seconds_ns(o_.duration);
    setup();
    io_thread io;
    server_monitor monitor(io.ioc, o_.server_pids);
    worker_pool pool(io.ioc);
    publisher_config pc;
    pc.target = o_.publish_target;
    pc.connections = o_.publish_conns;
    pc.inflight = o_.publish_inflight;
    pc.payload_bytes = o_.payload_bytes;
    pc.plan = plan_;
    publisher pub(io.ioc, pc);

    timeline_recorder timeline(io.ioc, start_ns_, [&] {
      auto t = sum_latest(pool.view());
      timeline_sample s;
      s.received = t.received;
      s.published = pub.sent_count();
      s.open = t.open;
      return s;
    });
    if (!o_.throughput_svg_file.empty())
      timeline.start();

    auto first = monitor.sample(true);
    for (std::size_t i = 0; i < r_.servers.size(); ++i)
      r_.servers[i].before = first[i];
    monitor.start();

    try {
      pool.start(self_exe(), worker_configs());
    } catch (const std::exception& e) {
      std::cerr << "herald-loadtest: cannot start workers: " << e.what() << "\n";
      io.stop();
      return 3;
    }
    scenario_phases phases(o_, plan_, r_, pool, pub, monitor, timeline, interrupted, start_ns_,
                           deadline_ns);
    phases.run();
    pub.stop();
    monitor.stop();
    auto last = monitor.sample();
    auto peaks = monitor.peaks();
    for (std::size_t i = 0; i < r_.servers.size(); ++i) {
      r_.servers[i].end = last[i];
      r_.servers[i].peak_rss_bytes = peaks[i];
      if (!r_.servers[i].publish_start.ok)
        r_.servers[i].publish_start = r_.servers[i].publish_end = r_.servers[i].after_connect;
    }
    assemble(r_, pool.view(), pub.stats(), phases.reading(), self_cpu_seconds());
    r_.wall_s = static_cast<double>(mono_ns() - start_ns_) / 1e9;
    judge(r_, o_, interrupted);
    io.stop(); // before the pool, publisher and monitor go
    write_outputs(o_, r_, timeline);
    return r_.problems.empty() ? 0 : 1;
  }

private:
  void setup() {
    std::uint64_t seed = o_.seed;
    if (seed == 0) {
      std::random_device rd;
      seed = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
    }
    plan_.prefix = o_.channel_prefix;
    plan_.streams = o_.channels;
    plan_.layout =
      o_.scen == scenario::spread ? channel_layout::streams_and_users : channel_layout::streams;
    plan_.seed = seed;

    r_.started_at = now_iso8601();
    r_.scenario = to_string(o_.scen);
    r_.transport = o_.transport;
    r_.targets = o_.targets;
    r_.publish_target = o_.publish_target;
    r_.connections = o_.connections;
    r_.channels = o_.channels;
    r_.user_channels = plan_.layout == channel_layout::streams_and_users;
    r_.workers = o_.workers;
    r_.source_addrs = o_.source_addrs.size();
    r_.payload_bytes = o_.payload_bytes;
    r_.rate = o_.rate;
    r_.publications = o_.publications;
    r_.find_max = o_.find_max;
    r_.storm = o_.scen == scenario::reconnect_storm;
    for (std::size_t i = 0; i < o_.server_pids.size(); ++i) {
      server_figures s;
      s.pid = o_.server_pids[i];
      if (o_.server_pids.size() == o_.targets.size())
        s.target = o_.targets[i];
      r_.servers.push_back(s);
    }
  }

  // One configuration per worker: consecutive shares of the connections
  // (the first `connections % workers` get one more) and of the ramp rate.
  std::vector<nlohmann::json> worker_configs() const {
    std::vector<nlohmann::json> out;
    std::uint64_t per = o_.connections / o_.workers;
    std::uint64_t extra = o_.connections % o_.workers;
    std::uint64_t first = 0;
    for (unsigned w = 0; w < o_.workers; ++w) {
      worker_config c;
      c.worker = static_cast<int>(w);
      c.first = first;
      c.count = per + (w < extra ? 1 : 0);
      first += c.count;
      c.transport = o_.transport;
      c.ws_deflate = o_.ws_deflate;
      c.centrifugo_delta = o_.centrifugo_delta;
      c.filter = o_.filter;
      c.resume_on_drop = o_.resume_on_drop;
      c.targets = o_.targets;
      c.sources = o_.source_addrs;
      c.plan = plan_;
      c.ramp_rate = o_.ramp_rate / o_.workers;
      c.slow_share = o_.slow_share;
      c.connect_timeout_s = o_.connect_timeout;
      c.lifetime_s = o_.duration + 60;
      out.push_back(c.to_json());
    }
    return out;
  }

  const options& o_;
  channel_plan plan_;
  run_result r_;
  std::int64_t start_ns_ = 0;
};

} // namespace

int run_controller(const options& o) {
  raise_file_limit();
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGPIPE, SIG_IGN);
  try {
    run r(o);
    return r.execute();
  } catch (const std::exception& e) {
    std::cerr << "herald-loadtest: " << e.what() << "\n";
    return 3;
  }
}

} // namespace herald::loadtest
