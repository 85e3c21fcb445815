#include "loadtest/worker.hpp"

#include "loadtest/clock.hpp"
#include "loadtest/histogram.hpp"
#include "loadtest/proc_sampler.hpp"
#include "loadtest/subscriber.hpp"
#include "net/wire/sse/cursor.hpp"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <iostream>
#include <memory>

namespace herald::loadtest {

nlohmann::json worker_config::to_json() const {
  return {{"worker", worker},
          {"first", first},
          {"count", count},
          {"transport", transport},
          {"ws_deflate", ws_deflate},
          {"centrifugo_delta", centrifugo_delta},
          {"filter_event", filter_event},
          {"resume_on_drop", resume_on_drop},
          {"targets", targets},
          {"sources", sources},
          {"plan",
           {{"prefix", plan.prefix},
            {"streams", plan.streams},
            {"layout", plan.layout == channel_layout::streams ? "streams" : "streams_and_users"},
            {"seed", plan.seed}}},
          {"ramp_rate", ramp_rate},
          {"slow_share", slow_share},
          {"connect_timeout_s", connect_timeout_s},
          {"lifetime_s", lifetime_s},
          {"max_connecting", max_connecting},
          {"resume_attempts", resume_attempts}};
}

worker_config worker_config::from_json(const nlohmann::json& j) {
  worker_config c;
  c.worker = j.at("worker").get<int>();
  c.first = j.at("first").get<std::uint64_t>();
  c.count = j.at("count").get<std::uint64_t>();
  c.transport = j.at("transport").get<std::string>();
  c.ws_deflate = j.value("ws_deflate", false);
  c.centrifugo_delta = j.value("centrifugo_delta", false);
  c.filter_event = j.value("filter_event", std::string{});
  c.resume_on_drop = j.value("resume_on_drop", false);
  c.targets = j.at("targets").get<std::vector<std::string>>();
  c.sources = j.at("sources").get<std::vector<std::string>>();
  const auto& p = j.at("plan");
  c.plan.prefix = p.at("prefix").get<std::string>();
  c.plan.streams = p.at("streams").get<std::uint32_t>();
  c.plan.layout = p.at("layout").get<std::string>() == "streams"
                    ? channel_layout::streams
                    : channel_layout::streams_and_users;
  c.plan.seed = p.at("seed").get<std::uint64_t>();
  c.ramp_rate = j.at("ramp_rate").get<double>();
  c.slow_share = j.at("slow_share").get<double>();
  c.connect_timeout_s = j.at("connect_timeout_s").get<double>();
  c.lifetime_s = j.at("lifetime_s").get<double>();
  c.max_connecting = j.at("max_connecting").get<std::size_t>();
  c.resume_attempts = j.at("resume_attempts").get<int>();
  return c;
}

bool is_slow_connection(std::uint64_t k, double share) noexcept {
  if (share <= 0)
    return false;
  // Spread the slow ones evenly over connection numbers (and so over
  // workers, targets and transports): a multiplicative hash, then a cut.
  std::uint64_t h = (k + 1) * 0x9E3779B97F4A7C15ull;
  return static_cast<double>(h >> 11) / static_cast<double>(1ull << 53) < share;
}

namespace {

nlohmann::json counters_json(const delivery_counters& c) {
  return {{"received", c.received},
          {"duplicates", c.duplicates},
          {"out_of_order", c.out_of_order},
          {"offset_gaps", c.offset_gaps},
          {"gap_notices", c.gap_notices},
          {"unparsed", c.unparsed},
          {"bytes", c.bytes},
          {"first_recv_ns", c.first_recv_ns},
          {"last_recv_ns", c.last_recv_ns}};
}

class worker final : public subscriber_events {
public:
  worker(worker_config cfg, int control_fd, int report_fd)
    : cfg_(std::move(cfg)),
      ctx_(ioc_),
      control_(ioc_, control_fd),
      report_fd_(report_fd),
      ramp_timer_(ioc_),
      tick_timer_(ioc_),
      life_timer_(ioc_) {
    ctx_.events = this;
    ctx_.rng.seed(cfg_.plan.seed ^ (static_cast<std::uint64_t>(cfg_.worker) << 40));
    ctx_.channel_names = cfg_.plan.names();
    for (const auto& n : ctx_.channel_names)
      ctx_.channel_hashes.push_back(net::sse::channel_hash(n));
    build_subscribers();
  }

  int run() {
    ramp_start_ns_ = mono_ns();
    ramp_tick();
    tick();
    read_control();
    life_timer_.expires_after(std::chrono::milliseconds(static_cast<long>(cfg_.lifetime_s * 1000)));
    life_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) {
        std::cerr << "herald-loadtest worker " << cfg_.worker << ": lifetime over, exiting\n";
        finish();
      }
    });
    ioc_.run();
    return 0;
  }

  void on_established(subscriber& s, bool resumed, std::int64_t took_ns) override {
    auto now = mono_ns();
    ++open_;
    if (resumed) {
      --resuming_;
      ++resumed_ok_;
      reconnect_.record(static_cast<std::uint64_t>(took_ns));
      if (resuming_ == 0 && storm_active_)
        storm_finished(now);
    } else {
      --connecting_;
      ++established_;
      ++established_by_target_[static_cast<std::size_t>(s.spec().target_index)];
      connect_.record(static_cast<std::uint64_t>(took_ns));
      last_established_ns_ = now;
      maybe_ready();
    }
  }

  void on_failed(subscriber& s, bool resumed, const std::string& reason) override {
    if (resumed) {
      ++failures_["resume: " + reason];
      auto& tries = resume_tries_[s.spec().index];
      if (++tries < cfg_.resume_attempts) {
        retry_.push_back(&s); // stays "resuming": retried by the next tick
        return;
      }
      --resuming_;
      ++resume_failed_;
      if (resuming_ == 0 && storm_active_)
        storm_finished(mono_ns());
      return;
    }
    ++failures_[reason];
    --connecting_;
    ++failed_;
    maybe_ready();
  }

  void on_dropped(subscriber& s, const std::string& reason) override {
    --open_;
    ++dropped_;
    ++failures_["dropped: " + reason];
    if (cfg_.resume_on_drop && !s.spec().slow) {
      // As a client would: reconnect with its position (the next tick).
      ++resuming_;
      retry_.push_back(&s);
    }
  }

private:
  void build_subscribers() {
    std::vector<tcp::endpoint> targets;
    for (const auto& t : cfg_.targets) {
      auto colon = t.rfind(':');
      targets.emplace_back(asio::ip::make_address_v4(t.substr(0, colon)),
                           static_cast<unsigned short>(std::stoul(t.substr(colon + 1))));
    }
    std::vector<asio::ip::address_v4> sources;
    for (const auto& s : cfg_.sources)
      sources.push_back(asio::ip::make_address_v4(s));
    established_by_target_.assign(targets.size(), 0);
    subs_.reserve(cfg_.count);
    for (std::uint64_t i = 0; i < cfg_.count; ++i) {
      auto k = cfg_.first + i;
      subscriber_spec spec;
      spec.index = k;
      spec.kind = cfg_.transport == "ws"           ? transport::ws
                  : cfg_.transport == "centrifugo" ? transport::centrifugo
                  : cfg_.transport == "centrifugo-protobuf" ? transport::centrifugo_protobuf
                  : cfg_.transport == "sse"        ? transport::sse
                                                   : (k % 2 == 0 ? transport::sse : transport::ws);
      spec.target_index = static_cast<int>(k % targets.size());
      spec.target = targets[static_cast<std::size_t>(spec.target_index)];
      spec.host = cfg_.targets[static_cast<std::size_t>(spec.target_index)];
      spec.source = sources[k % sources.size()];
      spec.channels = cfg_.plan.channels_of_connection(k);
      spec.slow = is_slow_connection(k, cfg_.slow_share);
      spec.deflate = cfg_.ws_deflate;
      spec.delta = cfg_.centrifugo_delta && spec.kind == transport::centrifugo;
      spec.filter_event = cfg_.filter_event;
      subs_.push_back(std::make_unique<subscriber>(ctx_, std::move(spec)));
    }
  }

  void ramp_tick() {
    auto now = mono_ns();
    auto elapsed = static_cast<double>(now - ramp_start_ns_) / 1e9;
    auto due = static_cast<std::uint64_t>(cfg_.ramp_rate * elapsed) + 1;
    if (due > subs_.size())
      due = subs_.size();
    while (next_ < due && connecting_ < cfg_.max_connecting) {
      if (first_start_ns_ == 0)
        first_start_ns_ = now;
      ++connecting_;
      subs_[next_++]->start(false);
    }
    if (next_ < subs_.size()) {
      ramp_timer_.expires_after(std::chrono::milliseconds(5));
      ramp_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec)
          ramp_tick();
      });
    }
    maybe_ready();
  }

  void maybe_ready() {
    if (ready_sent_ || next_ < subs_.size() || connecting_ > 0)
      return;
    ready_sent_ = true;
    // Reading subscribers per channel id: what the parent expects to deliver.
    std::vector<std::uint64_t> per_channel(ctx_.channel_names.size(), 0);
    std::uint64_t slow = 0;
    std::uint64_t reading = 0;
    for (const auto& s : subs_) {
      if (s->current() != subscriber::state::established)
        continue;
      if (s->spec().slow) {
        ++slow;
        continue;
      }
      ++reading;
      for (std::size_t i = 0; i < s->channel_count(); ++i)
        ++per_channel[static_cast<std::size_t>(s->channel_id(i))];
    }
    auto subs = nlohmann::json::array();
    for (std::size_t id = 0; id < per_channel.size(); ++id)
      if (per_channel[id])
        subs.push_back({id, per_channel[id]});
    auto rss = sample_process(static_cast<int>(getpid()));
    report({{"type", "ready"},
            {"established", established_},
            {"failed", failed_},
            {"slow", slow},
            {"reading", reading},
            {"by_target", established_by_target_},
            {"subs", std::move(subs)},
            {"first_start_ns", first_start_ns_},
            {"last_established_ns", last_established_ns_},
            {"rss_bytes", rss.rss_bytes}});
  }

  void tick() {
    auto now = mono_ns();
    auto timeout = seconds_ns(cfg_.connect_timeout_s);
    for (auto& s : subs_)
      s->check_timeout(now, timeout);
    auto retry = std::move(retry_);
    retry_.clear();
    for (auto* s : retry)
      s->start(true);
    report_progress();
    tick_timer_.expires_after(std::chrono::milliseconds(250));
    tick_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec)
        tick();
    });
  }

  nlohmann::json progress_fields() const {
    return {{"attempted", next_},          {"established", established_},
            {"failed", failed_},           {"open", open_},
            {"dropped", dropped_},         {"resuming", resuming_},
            {"resumed", resumed_ok_},      {"resume_failed", resume_failed_},
            {"cpu_s", self_cpu_seconds()}, {"counters", counters_json(ctx_.counters)}};
  }

  void report_progress() {
    auto j = progress_fields();
    j["type"] = "progress";
    report(j);
  }

  void read_control() {
    asio::async_read_until(control_, asio::dynamic_buffer(control_buf_), '\n',
                           [this](const boost::system::error_code& ec, std::size_t n) {
                             if (ec) {
                               finish(); // the parent is gone
                               return;
                             }
                             std::string line = control_buf_.substr(0, n);
                             control_buf_.erase(0, n);
                             on_command(nlohmann::json::parse(line, nullptr, false));
                             if (!finished_)
                               read_control();
                           });
  }

  void on_command(const nlohmann::json& j) {
    if (!j.is_object())
      return;
    auto cmd = j.value("cmd", std::string{});
    if (cmd == "reconnect") {
      start_storm();
    } else if (cmd == "snapshot") {
      auto r = progress_fields();
      r["type"] = "snapshot";
      r["id"] = j.value("id", 0);
      r["latency"] = ctx_.step_latency.to_json();
      ctx_.step_latency.reset();
      report(r);
    } else if (cmd == "finish") {
      finish();
    }
  }

  void start_storm() {
    storm_active_ = true;
    storm_start_ns_ = mono_ns();
    std::size_t n = 0;
    for (auto& s : subs_) {
      if (s->current() != subscriber::state::established || s->spec().slow)
        continue;
      if (!s->has_position())
        ++no_position_;
      s->drop();
      --open_;
      ++resuming_;
      ++n;
      s->start(true);
    }
    if (n == 0)
      storm_finished(mono_ns());
  }

  void storm_finished(std::int64_t now) {
    storm_active_ = false;
    report({{"type", "storm_done"},
            {"start_ns", storm_start_ns_},
            {"end_ns", now},
            {"resumed", resumed_ok_},
            {"resume_failed", resume_failed_},
            {"no_position", no_position_}});
  }

  void finish() {
    if (finished_)
      return;
    finished_ = true;
    std::uint64_t slow = 0, slow_closed = 0;
    for (auto& s : subs_) {
      if (!s->spec().slow || s->current() == subscriber::state::idle)
        continue;
      ++slow;
      if (s->closed_by_server())
        ++slow_closed;
    }
    auto r = progress_fields();
    r["type"] = "result";
    r["worker"] = cfg_.worker;
    r["slow"] = slow;
    r["slow_closed_by_server"] = slow_closed;
    r["no_position"] = no_position_;
    r["latency"] = ctx_.latency.to_json();
    r["connect"] = connect_.to_json();
    r["reconnect"] = reconnect_.to_json();
    r["failures"] = failures_;
    r["notices"] = ctx_.notices;
    r["first_start_ns"] = first_start_ns_;
    r["last_established_ns"] = last_established_ns_;
    r["rss_bytes"] = sample_process(static_cast<int>(getpid())).rss_bytes;
    report(r);
    for (auto& s : subs_)
      s->drop();
    ioc_.stop();
  }

  void report(const nlohmann::json& j) {
    std::string line = j.dump();
    line.push_back('\n');
    // A failure means the parent is gone; stdin EOF ends us soon.
    write_all(report_fd_, line);
  }

  worker_config cfg_;
  asio::io_context ioc_{1};
  subscriber_context ctx_;
  asio::posix::stream_descriptor control_;
  std::string control_buf_;
  int report_fd_;
  asio::steady_timer ramp_timer_;
  asio::steady_timer tick_timer_;
  asio::steady_timer life_timer_;
  std::vector<std::unique_ptr<subscriber>> subs_;
  std::vector<subscriber*> retry_;
  std::map<std::uint64_t, int> resume_tries_;
  histogram connect_;
  histogram reconnect_;
  std::map<std::string, std::uint64_t> failures_;
  std::vector<std::uint64_t> established_by_target_;
  std::size_t next_ = 0;
  std::size_t connecting_ = 0;
  std::uint64_t established_ = 0, failed_ = 0, open_ = 0, dropped_ = 0;
  std::uint64_t resuming_ = 0, resumed_ok_ = 0, resume_failed_ = 0, no_position_ = 0;
  std::int64_t ramp_start_ns_ = 0, first_start_ns_ = 0, last_established_ns_ = 0;
  std::int64_t storm_start_ns_ = 0;
  bool ready_sent_ = false;
  bool storm_active_ = false;
  bool finished_ = false;
};

} // namespace

int run_worker(int control_fd, int report_fd) {
  // The parent decides when we stop: Ctrl-C (or timeout(1)) signals the
  // whole process group, and the parent still wants our results. We die
  // with the parent anyway (PR_SET_PDEATHSIG), or when stdin closes.
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
  // The first line is the configuration. Read byte by byte: whatever
  // follows it belongs to the command reader.
  std::string line;
  for (char c;;) {
    auto n = ::read(control_fd, &c, 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      std::cerr << "herald-loadtest worker: no configuration on the control pipe\n";
      return 3;
    }
    if (c == '\n')
      break;
    line.push_back(c);
  }
  worker_config cfg;
  try {
    cfg = worker_config::from_json(nlohmann::json::parse(line));
  } catch (const std::exception& e) {
    std::cerr << "herald-loadtest worker: bad configuration: " << e.what() << "\n";
    return 3;
  }
  try {
    worker w(std::move(cfg), control_fd, report_fd);
    return w.run();
  } catch (const std::exception& e) {
    std::cerr << "herald-loadtest worker: " << e.what() << "\n";
    return 3;
  }
}

bool write_all(int fd, std::string_view bytes) {
  const char* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    auto n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

} // namespace herald::loadtest
