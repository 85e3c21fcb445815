#include "loadtest/controller.hpp"

#include "loadtest/channel_plan.hpp"
#include "loadtest/clock.hpp"
#include "loadtest/newcomer_probe.hpp"
#include "loadtest/proc_sampler.hpp"
#include "loadtest/publisher.hpp"
#include "loadtest/report.hpp"
#include "loadtest/svg_plot.hpp"
#include "loadtest/worker.hpp"
#include "loadtest/worker_pool.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>
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

/// Worker reports added up (the final result where there is one).
struct totals {
  std::uint64_t attempted = 0, established = 0, failed = 0, open = 0, dropped = 0;
  std::uint64_t resuming = 0, resumed = 0, resume_failed = 0;
  std::uint64_t received = 0, duplicates = 0, out_of_order = 0, offset_gaps = 0;
  std::uint64_t gap_notices = 0, unparsed = 0, bytes = 0;
  std::int64_t first_recv_ns = 0, last_recv_ns = 0;
  double cpu_s = 0;

  std::uint64_t unique() const noexcept { return received - std::min(received, duplicates); }

  void add(const nlohmann::json& p) {
    if (!p.is_object())
      return;
    auto u = [&](const char* k) { return p.value(k, std::uint64_t{0}); };
    attempted += u("attempted");
    established += u("established");
    failed += u("failed");
    open += u("open");
    dropped += u("dropped");
    resuming += u("resuming");
    resumed += u("resumed");
    resume_failed += u("resume_failed");
    cpu_s += p.value("cpu_s", 0.0);
    if (!p.contains("counters"))
      return;
    const auto& c = p["counters"];
    auto cu = [&](const char* k) { return c.value(k, std::uint64_t{0}); };
    received += cu("received");
    duplicates += cu("duplicates");
    out_of_order += cu("out_of_order");
    offset_gaps += cu("offset_gaps");
    gap_notices += cu("gap_notices");
    unparsed += cu("unparsed");
    bytes += cu("bytes");
    auto first = c.value("first_recv_ns", std::int64_t{0});
    if (first && (first_recv_ns == 0 || first < first_recv_ns))
      first_recv_ns = first;
    last_recv_ns = std::max(last_recv_ns, c.value("last_recv_ns", std::int64_t{0}));
  }
};

totals sum(const std::vector<worker_view>& views) {
  totals t;
  for (const auto& v : views)
    t.add(v.result.is_null() ? v.progress : v.result);
  return t;
}

/// Samples the server processes every 500 ms on the I/O thread and keeps
/// each one's peak RSS.
class server_monitor {
public:
  server_monitor(asio::io_context& ioc, std::vector<int> pids)
    : timer_(ioc),
      pids_(std::move(pids)),
      peaks_(pids_.size(), 0) {}

  void start() {
    if (pids_.empty())
      return;
    asio::post(timer_.get_executor(), [this] { tick(); });
  }
  void stop() {
    std::lock_guard lock(mu_);
    stopped_ = true;
  }
  std::vector<std::uint64_t> peaks() const {
    std::lock_guard lock(mu_);
    return peaks_;
  }
  /// Samples now (any thread) and folds the result into the peaks.
  std::vector<proc_sample> sample(bool count_files = false) {
    std::vector<proc_sample> out;
    for (int pid : pids_)
      out.push_back(sample_process(pid, count_files));
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < out.size(); ++i)
      peaks_[i] = std::max(peaks_[i], out[i].rss_bytes);
    return out;
  }

private:
  void tick() {
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

  asio::steady_timer timer_;
  std::vector<int> pids_;
  mutable std::mutex mu_;
  std::vector<std::uint64_t> peaks_;
  bool stopped_ = false;
};

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
    deadline_ns_ = start_ns_ + seconds_ns(o_.duration);
    setup();
    io_thread io;
    server_monitor monitor(io.ioc, o_.server_pids);
    monitor_ = &monitor;
    worker_pool pool(io.ioc);
    pool_ = &pool;
    publisher_config pc;
    pc.target = o_.publish_target;
    pc.connections = o_.publish_conns;
    pc.inflight = o_.publish_inflight;
    pc.payload_bytes = o_.payload_bytes;
    pc.plan = plan_;
    publisher pub(io.ioc, pc);
    pub_ = &pub;

    // The timeline (--throughput-svg): every 250 ms on the I/O thread.
    asio::steady_timer timeline_timer(io.ioc);
    std::function<void()> sample_timeline = [&] {
      auto t = sum(pool.view());
      {
        std::lock_guard lock(timeline_mu_);
        timeline_.push_back(
          {static_cast<double>(mono_ns() - start_ns_) / 1e9, t.received, pub.sent_count(), t.open});
      }
      timeline_timer.expires_after(std::chrono::milliseconds(250));
      timeline_timer.async_wait([&](const boost::system::error_code& ec) {
        if (!ec)
          sample_timeline();
      });
    };
    if (!o_.throughput_svg_file.empty())
      asio::post(io.ioc, sample_timeline);

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
    connect_phase();
    if (!stopping() && ready_established_ == 0 && o_.scen != scenario::idle) {
      say("stopping", "no connection was established: nothing to publish to");
    } else if (!stopping()) {
      if (o_.scen == scenario::idle)
        hold_phase();
      else if (o_.find_max)
        find_max_phase();
      else
        publish_phase();
    }
    finish_phase();
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
    assemble();
    io.stop(); // before the pool, publisher and monitor go
    return output();
  }

private:
  bool stopping() const { return interrupted.load() || mono_ns() >= deadline_ns_; }

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

  void say(const std::string& phase, const std::string& text) {
    if (o_.quiet)
      return;
    char head[48];
    std::snprintf(head, sizeof head, "[%6.1fs] ", static_cast<double>(mono_ns() - start_ns_) / 1e9);
    std::cerr << head << phase << ": " << text << std::endl;
  }

  // Waits for pred on the workers, printing progress every second.
  bool wait_workers(const std::function<bool(const std::vector<worker_view>&)>& pred,
                    std::int64_t deadline, const std::string& phase) {
    deadline = std::min(deadline, deadline_ns_);
    for (;;) {
      auto slice = std::min(deadline, mono_ns() + 1'000'000'000);
      if (pool_->wait_until(pred, slice, [] { return interrupted.load(); }))
        return true;
      if (mono_ns() >= deadline || interrupted)
        return false;
      progress(phase);
    }
  }

  void progress(const std::string& phase) {
    auto t = sum(pool_->view());
    std::ostringstream s;
    s << t.established << "/" << o_.connections << " established, " << t.failed << " failed, "
      << t.open << " open";
    if (t.resuming)
      s << ", " << t.resuming << " resuming";
    if (phase != "connecting") {
      auto ps = pub_->stats();
      s << "; " << ps.sent << "/" << ps.requested << " published, " << t.received << " delivered";
    }
    say(phase, s.str());
  }

  static bool all_ready(const std::vector<worker_view>& v) {
    return std::all_of(v.begin(), v.end(),
                       [](const worker_view& w) { return !w.ready.is_null() || !w.alive; });
  }

  void connect_phase() {
    say("connecting", std::to_string(o_.connections) + " connections at " +
                        std::to_string(static_cast<long>(o_.ramp_rate)) + "/s over " +
                        std::to_string(o_.workers) + " worker(s)");
    if (!wait_workers(all_ready, deadline_ns_, "connecting"))
      r_.problems.push_back("not every connection attempt finished before the deadline");
    auto views = pool_->view();
    std::int64_t first = 0, last = 0;
    subs_.assign(static_cast<std::size_t>(plan_.total()), 0);
    std::vector<std::uint64_t> by_target(o_.targets.size(), 0);
    for (const auto& v : views) {
      if (v.ready.is_null())
        continue;
      const auto& rd = v.ready;
      auto f = rd.value("first_start_ns", std::int64_t{0});
      if (f && (first == 0 || f < first))
        first = f;
      last = std::max(last, rd.value("last_established_ns", std::int64_t{0}));
      reading_ += rd.value("reading", std::uint64_t{0});
      for (const auto& e : rd["subs"])
        subs_[e.at(0).get<std::size_t>()] += e.at(1).get<std::uint64_t>();
      auto bt = rd.value("by_target", std::vector<std::uint64_t>{});
      for (std::size_t i = 0; i < bt.size() && i < by_target.size(); ++i)
        by_target[i] += bt[i];
    }
    r_.establish_s = last > first ? static_cast<double>(last - first) / 1e9 : 0;
    std::uint64_t total = 0;
    for (auto n : by_target)
      total += n;
    for (std::size_t i = 0; i < r_.servers.size(); ++i) {
      auto& s = r_.servers[i];
      s.connections = r_.servers.size() == o_.targets.size() ? by_target[i]
                      : r_.servers.size() == 1               ? total
                                                             : total / r_.servers.size();
    }
    std::uint64_t ok = 0, failed = 0;
    for (const auto& v : views)
      if (!v.ready.is_null()) {
        ok += v.ready.value("established", std::uint64_t{0});
        failed += v.ready.value("failed", std::uint64_t{0});
      }
    ready_established_ = ok;
    char took[32];
    std::snprintf(took, sizeof took, "%.2f s", r_.establish_s);
    say("connected",
        std::to_string(ok) + " established, " + std::to_string(failed) + " failed in " + took);
    if (o_.scen != scenario::idle)
      sleep_ms(o_.settle_ms);
    else
      sleep_ms(std::max(o_.settle_ms, 1000.0)); // let the server's memory settle
    auto after = monitor_->sample(true);
    for (std::size_t i = 0; i < r_.servers.size(); ++i)
      r_.servers[i].after_connect = after[i];
  }

  void sleep_ms(double ms) {
    auto until = std::min(deadline_ns_, mono_ns() + static_cast<std::int64_t>(ms * 1e6));
    while (!interrupted && mono_ns() < until)
      std::this_thread::sleep_for(
        std::chrono::milliseconds(std::min<std::int64_t>(50, (until - mono_ns()) / 1'000'000 + 1)));
  }

  void hold_phase() {
    auto until = std::min(deadline_ns_, mono_ns() + seconds_ns(o_.hold_seconds));
    say("holding", std::to_string(o_.hold_seconds) + " s");
    while (!stopping() && mono_ns() < until) {
      sleep_ms(std::min(1000.0, static_cast<double>(until - mono_ns()) / 1e6));
      progress("holding");
    }
  }

  std::uint64_t expected_for(const publisher_stats& now, const publisher_stats* before) const {
    if (now.broadcast) {
      auto ok = now.ok - (before ? before->ok : 0);
      return ok * reading_;
    }
    std::uint64_t e = 0;
    for (std::size_t c = 0; c < subs_.size() && c < now.ok_per_channel.size(); ++c) {
      auto ok = now.ok_per_channel[c] - (before ? before->ok_per_channel[c] : 0);
      e += ok * subs_[c];
    }
    return e;
  }

  // Waits until `unique` deliveries since `base` reach `expected`, or no
  // delivery arrives for --drain-seconds.
  void drain(std::uint64_t base, std::uint64_t expected, const std::string& phase) {
    auto last_value = sum(pool_->view()).unique();
    auto last_change = mono_ns();
    auto last_print = mono_ns();
    while (!stopping()) {
      auto v = sum(pool_->view()).unique();
      if (v - base >= expected)
        return;
      auto now = mono_ns();
      if (v != last_value) {
        last_value = v;
        last_change = now;
      } else if (now - last_change > seconds_ns(o_.drain_seconds)) {
        say(phase, "no delivery for " + std::to_string(o_.drain_seconds) + " s: " +
                     std::to_string(v - base) + "/" + std::to_string(expected) + " arrived");
        return;
      }
      if (now - last_print > 1'000'000'000) {
        last_print = now;
        say(phase,
            "waiting for deliveries: " + std::to_string(v - base) + "/" + std::to_string(expected));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  void mark_publish_start() {
    auto s = monitor_->sample();
    for (std::size_t i = 0; i < r_.servers.size(); ++i)
      r_.servers[i].publish_start = s[i];
    publish_cpu0_ = sum(pool_->view()).cpu_s;
  }

  void mark_publish_end() {
    auto s = monitor_->sample();
    for (std::size_t i = 0; i < r_.servers.size(); ++i)
      r_.servers[i].publish_end = s[i];
    r_.generator_publish_cpu_s = sum(pool_->view()).cpu_s - publish_cpu0_;
  }

  bool wait_publisher(const std::string& phase) {
    for (;;) {
      auto slice = std::min(deadline_ns_, mono_ns() + 1'000'000'000);
      if (pub_->wait_idle(slice, &interrupted))
        return true;
      if (stopping())
        return false;
      progress(phase);
    }
  }

  void publish_phase() {
    char rate[32];
    std::snprintf(rate, sizeof rate, "%g", o_.rate);
    say("publishing", std::to_string(o_.publications) + " publications at " + rate + "/s to " +
                        o_.publish_target);
    auto base = sum(pool_->view()).unique();
    mark_publish_start();
    pub_->start(1, o_.publications, o_.rate);
    if (o_.scen == scenario::reconnect_storm) {
      auto half = std::max<std::uint64_t>(1, o_.publications / 2);
      while (!stopping() && pub_->sent_count() < half)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      say("storm", "every connection drops and resumes now; new subscribers keep arriving");
      // Newcomers: fresh SSE subscribers of a channel outside the plan, one
      // after another (10 ms apart) for as long as the storm lasts.
      newcomer_probe newcomers(o_.targets.front(), "stream:storm-newcomers", 10, 5000);
      mark("storm");
      pool_->broadcast({{"cmd", "reconnect"}});
      newcomers.start();
      wait_workers(
        [](const std::vector<worker_view>& v) {
          return std::all_of(v.begin(), v.end(),
                             [](const worker_view& w) { return !w.storm.is_null() || !w.alive; });
        },
        deadline_ns_, "storm");
      mark("resumed");
      newcomers.stop();
      r_.newcomers = newcomers.figures();
      if (r_.newcomers.attempted == 0)
        r_.problems.push_back("no new subscriber was tried during the storm");
      else if (r_.newcomers.accepted != r_.newcomers.attempted)
        r_.problems.push_back(std::to_string(r_.newcomers.attempted - r_.newcomers.accepted) +
                              " of " + std::to_string(r_.newcomers.attempted) +
                              " new subscribers not accepted during the storm");
    }
    if (!wait_publisher("publishing"))
      r_.problems.push_back("publishing did not finish before the deadline");
    drain(base, expected_for(pub_->stats(), nullptr), "draining");
    mark_publish_end();
  }

  void find_max_phase() {
    double rate = o_.rate;
    std::uint64_t seq = 1;
    int snap = 0;
    mark_publish_start();
    while (!stopping()) {
      auto n =
        static_cast<std::uint64_t>(std::max(1.0, std::llround(rate * o_.step_seconds) * 1.0));
      // Start the step with fresh per-step latency histograms.
      int begin_id = ++snap;
      pool_->broadcast({{"cmd", "snapshot"}, {"id", begin_id}});
      if (!wait_workers(snapshot_from_all(begin_id), deadline_ns_, "find-max"))
        break;
      auto before_totals = snapshot_totals(begin_id);
      auto before = pub_->stats();
      say("find-max", "step at " + std::to_string(static_cast<long>(rate)) +
                        "/s: " + std::to_string(n) + " publications");
      auto t0 = mono_ns();
      pub_->start(seq, n, rate);
      seq += n;
      wait_publisher("find-max");
      auto after = pub_->stats();
      auto expected = expected_for(after, &before);
      drain(before_totals.unique(), expected, "find-max");
      int end_id = ++snap;
      pool_->broadcast({{"cmd", "snapshot"}, {"id", end_id}});
      if (!wait_workers(snapshot_from_all(end_id), deadline_ns_, "find-max"))
        break;
      auto after_totals = snapshot_totals(end_id);

      step_result s;
      s.target_rate = rate;
      s.published = after.ok - before.ok;
      double send_span = static_cast<double>(after.last_send_ns - t0) / 1e9;
      s.achieved_rate = n > 1 && send_span > 0 ? static_cast<double>(n - 1) / send_span : rate;
      s.expected = expected;
      s.received = after_totals.unique() - before_totals.unique();
      s.duplicates = after_totals.duplicates - before_totals.duplicates;
      s.out_of_order = after_totals.out_of_order - before_totals.out_of_order;
      for (const auto& v : pool_->view())
        if (auto it = v.snapshots.find(end_id); it != v.snapshots.end())
          s.latency.merge(histogram::from_json(it->second["latency"]));
      double span = static_cast<double>(after_totals.last_recv_ns - t0) / 1e9;
      s.deliveries_per_s = span > 0 ? static_cast<double>(s.received) / span : 0;
      auto p99 = static_cast<double>(s.latency.value_at_quantile(0.99)) / 1e6;
      if (s.received < s.expected)
        s.verdict = "loss";
      else if (p99 > o_.max_p99_ms)
        s.verdict = "p99 over " + std::to_string(static_cast<long>(o_.max_p99_ms)) + " ms";
      else if (s.achieved_rate < 0.9 * rate)
        s.verdict = "publisher fell behind";
      else if (after.failed + after.unknown > before.failed + before.unknown)
        s.verdict = "publish errors";
      else if (s.duplicates || s.out_of_order)
        s.verdict = "duplicates/reordering";
      s.pass = s.verdict.empty();
      say("find-max", std::to_string(static_cast<long>(rate)) + "/s: p99 " + std::to_string(p99) +
                        " ms, " + std::to_string(s.received) + "/" + std::to_string(s.expected) +
                        " delivered: " + (s.pass ? "ok" : s.verdict));
      r_.steps.push_back(std::move(s));
      if (!r_.steps.back().pass)
        break;
      r_.max_sustained_rate = rate;
      rate *= o_.step_factor;
    }
    mark_publish_end();
  }

  static std::function<bool(const std::vector<worker_view>&)> snapshot_from_all(int id) {
    return [id](const std::vector<worker_view>& v) {
      return std::all_of(v.begin(), v.end(), [id](const worker_view& w) {
        return w.snapshots.count(id) > 0 || !w.alive;
      });
    };
  }

  totals snapshot_totals(int id) const {
    totals t;
    for (const auto& v : pool_->view())
      if (auto it = v.snapshots.find(id); it != v.snapshots.end())
        t.add(it->second);
    return t;
  }

  void finish_phase() {
    pool_->broadcast({{"cmd", "finish"}});
    auto grace = mono_ns() + seconds_ns(20);
    pool_->wait_until(
      [](const std::vector<worker_view>& v) {
        return std::all_of(v.begin(), v.end(),
                           [](const worker_view& w) { return !w.result.is_null() || !w.alive; });
      },
      grace);
    pool_->reap(mono_ns() + seconds_ns(5));
  }

  void assemble() {
    auto views = pool_->view();
    for (std::size_t i = 0; i < views.size(); ++i) {
      const auto& res = views[i].result;
      if (res.is_null()) {
        r_.problems.push_back("worker " + std::to_string(i) + " gave no result");
        continue;
      }
      r_.latency.merge(histogram::from_json(res["latency"]));
      r_.connect.merge(histogram::from_json(res["connect"]));
      r_.reconnect.merge(histogram::from_json(res["reconnect"]));
      for (const auto& [k, v] : res["failures"].items())
        r_.failures[k] += v.get<std::uint64_t>();
      for (const auto& [k, v] : res["notices"].items())
        r_.notices[k] += v.get<std::uint64_t>();
      r_.slow += res.value("slow", std::uint64_t{0});
      r_.slow_closed_by_server += res.value("slow_closed_by_server", std::uint64_t{0});
      r_.no_position += res.value("no_position", std::uint64_t{0});
      r_.worker_rss_bytes += res.value("rss_bytes", std::uint64_t{0});
      if (!views[i].storm.is_null()) {
        double s = static_cast<double>(views[i].storm.value("end_ns", std::int64_t{0}) -
                                       views[i].storm.value("start_ns", std::int64_t{0})) /
                   1e9;
        r_.storm_s = std::max(r_.storm_s, s);
      }
    }
    auto t = sum(views);
    r_.established = t.established;
    r_.failed = t.failed;
    r_.dropped = t.dropped;
    r_.resumed = t.resumed;
    r_.resume_failed = t.resume_failed;
    r_.received = t.received;
    r_.duplicates = t.duplicates;
    r_.out_of_order = t.out_of_order;
    r_.offset_gaps = t.offset_gaps;
    r_.gap_notices = t.gap_notices;
    r_.unparsed = t.unparsed;
    r_.generator_cpu_s = self_cpu_seconds() + t.cpu_s;

    r_.pub = pub_->stats();
    r_.publish_s =
      r_.pub.sent > 1 ? static_cast<double>(r_.pub.last_send_ns - r_.pub.first_send_ns) / 1e9 : 0;
    r_.achieved_rate = r_.publish_s > 0 ? static_cast<double>(r_.pub.sent - 1) / r_.publish_s
                                        : static_cast<double>(r_.pub.sent);
    if (r_.pub.ok && r_.pub.last_ok_ns > r_.pub.first_send_ns)
      r_.acked_rate = static_cast<double>(r_.pub.ok) /
                      (static_cast<double>(r_.pub.last_ok_ns - r_.pub.first_send_ns) / 1e9);
    r_.expected = expected_for(r_.pub, nullptr);
    r_.loss = r_.expected > t.unique() ? r_.expected - t.unique() : 0;
    if (t.received && r_.pub.first_send_ns && t.last_recv_ns > r_.pub.first_send_ns)
      r_.deliveries_per_s = static_cast<double>(t.received) /
                            (static_cast<double>(t.last_recv_ns - r_.pub.first_send_ns) / 1e9);
    r_.wall_s = static_cast<double>(mono_ns() - start_ns_) / 1e9;
    judge();
  }

  void judge() {
    auto& p = r_.problems;
    auto n = [](std::uint64_t v) { return std::to_string(v); };
    if (interrupted)
      p.push_back("interrupted");
    if (r_.established == 0)
      p.push_back("no connection was established");
    if (r_.failed)
      p.push_back(n(r_.failed) + " connection attempts failed");
    if (r_.dropped)
      p.push_back(n(r_.dropped) + " connections were dropped by the server");
    if (r_.duplicates)
      p.push_back(n(r_.duplicates) + " duplicate deliveries");
    if (r_.out_of_order)
      p.push_back(n(r_.out_of_order) + " out-of-order deliveries");
    if (r_.resume_failed)
      p.push_back(n(r_.resume_failed) + " connections could not resume");
    if (r_.pub.offset_anomalies)
      p.push_back(n(r_.pub.offset_anomalies) + " publish answers with non-consecutive offsets");
    if (o_.find_max) {
      if (r_.steps.empty() || !r_.steps.front().pass)
        p.push_back("the first --find-max step already failed (lower --rate)");
      return; // the last step fails by design: loss there is the measurement
    }
    if (r_.loss)
      p.push_back(n(r_.loss) + " deliveries lost");
    if (r_.gap_notices)
      p.push_back(n(r_.gap_notices) + " gap notices from the server");
    if (r_.pub.failed || r_.pub.unknown)
      p.push_back(n(r_.pub.failed + r_.pub.unknown) + " publications failed or were not answered");
    if (o_.scen != scenario::idle && r_.pub.ok < o_.publications)
      p.push_back("only " + n(r_.pub.ok) + " of " + n(o_.publications) +
                  " publications were accepted");
  }

  int output() {
    auto j = to_json(r_);
    if (o_.json)
      std::cout << j.dump(2) << std::endl;
    else
      print_table(std::cout, r_);
    if (!o_.json_file.empty()) {
      std::ofstream f(o_.json_file);
      f << j.dump(2) << "\n";
      if (!f)
        std::cerr << "herald-loadtest: cannot write " << o_.json_file << "\n";
    }
    if (!o_.svg_file.empty()) {
      std::vector<plot_series> series;
      std::string title = "herald-loadtest " + r_.scenario + " " + r_.transport + ", " +
                          std::to_string(r_.connections) + " connections";
      if (o_.find_max) {
        for (const auto& s : r_.steps)
          series.emplace_back(std::to_string(static_cast<long>(s.target_rate)) + " publications/s",
                              &s.latency);
      } else {
        series.emplace_back(std::to_string(static_cast<long>(r_.rate)) + " publications/s",
                            &r_.latency);
      }
      bool any = std::any_of(series.begin(), series.end(),
                             [](const plot_series& s) { return s.second->count() > 0; });
      if (!any)
        std::cerr << "herald-loadtest: no latency to plot (nothing delivered): " << o_.svg_file
                  << " not written\n";
      else if (!write_percentile_svg(o_.svg_file, title, series))
        std::cerr << "herald-loadtest: cannot write " << o_.svg_file << "\n";
    }
    if (!o_.throughput_svg_file.empty()) {
      std::string title = "herald-loadtest " + r_.scenario + " " + r_.transport + ", " +
                          std::to_string(r_.connections) + " connections: throughput";
      std::lock_guard lock(timeline_mu_);
      if (!write_timeline_svg(o_.throughput_svg_file, title, timeline_, markers_))
        std::cerr << "herald-loadtest: cannot write " << o_.throughput_svg_file << "\n";
    }
    return r_.problems.empty() ? 0 : 1;
  }

  /// A moment worth a line on the throughput plot, seconds since the start.
  void mark(const std::string& what) {
    std::lock_guard lock(timeline_mu_);
    markers_.emplace_back(what, static_cast<double>(mono_ns() - start_ns_) / 1e9);
  }

  const options& o_;
  channel_plan plan_;
  run_result r_;
  std::mutex timeline_mu_;
  std::vector<timeline_sample> timeline_;
  std::vector<timeline_marker> markers_;
  std::int64_t start_ns_ = 0;
  std::int64_t deadline_ns_ = 0;
  worker_pool* pool_ = nullptr;
  publisher* pub_ = nullptr;
  server_monitor* monitor_ = nullptr;
  std::vector<std::uint64_t> subs_;     // reading subscriptions per channel id
  std::uint64_t reading_ = 0;           // reading connections
  std::uint64_t ready_established_ = 0; // connections established by the end of the ramp
  double publish_cpu0_ = 0;
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
