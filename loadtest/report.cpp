#include "loadtest/report.hpp"

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

namespace herald::loadtest {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string ms(std::uint64_t ns) {
  double v = static_cast<double>(ns) / 1e6;
  if (v < 10)
    return fmt("%.2f ms", v);
  if (v < 1000)
    return fmt("%.1f ms", v);
  return fmt("%.2f s", v / 1000);
}

std::string mib(std::uint64_t bytes) {
  return fmt("%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

std::string count(std::uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

std::string percentile_line(const histogram& h) {
  if (h.count() == 0)
    return "(none)";
  std::ostringstream o;
  o << "p50 " << ms(h.value_at_quantile(0.5)) << "  p90 " << ms(h.value_at_quantile(0.9))
    << "  p99 " << ms(h.value_at_quantile(0.99)) << "  p99.9 " << ms(h.value_at_quantile(0.999))
    << "  max " << ms(h.max()) << "  (n=" << count(h.count()) << ")";
  return o.str();
}

nlohmann::json map_json(const std::map<std::string, std::uint64_t>& m) {
  auto j = nlohmann::json::object();
  for (const auto& [k, v] : m)
    j[k] = v;
  return j;
}

} // namespace

double server_figures::bytes_per_connection() const noexcept {
  if (connections == 0 || !before.ok || !after_connect.ok)
    return 0;
  return (static_cast<double>(after_connect.rss_bytes) - static_cast<double>(before.rss_bytes)) /
         static_cast<double>(connections);
}

double server_figures::publish_cpu_pct() const noexcept {
  double wall = static_cast<double>(publish_end.t_ns - publish_start.t_ns) / 1e9;
  return wall > 0 ? 100 * publish_cpu_s() / wall : 0;
}

nlohmann::json percentiles_ms(const histogram& h) {
  auto v = [&](double q) { return static_cast<double>(h.value_at_quantile(q)) / 1e6; };
  return {{"n", h.count()},        {"p50", v(0.5)},     {"p90", v(0.9)},
          {"p99", v(0.99)},        {"p99_9", v(0.999)}, {"max", static_cast<double>(h.max()) / 1e6},
          {"mean", h.mean() / 1e6}};
}

void print_table(std::ostream& out, const run_result& r) {
  auto row = [&](const std::string& label, const std::string& text) {
    out << "  " << std::left << std::setw(14) << label << text << "\n";
  };
  out << "herald-loadtest  " << r.started_at << "\n";
  {
    std::ostringstream s;
    s << r.scenario << ", " << r.transport << ", " << count(r.connections) << " connections over "
      << r.workers << " worker(s) and " << r.source_addrs << " source address(es), " << r.channels
      << " stream channel(s)" << (r.user_channels ? " + as many user channels" : "");
    row("run", s.str());
  }
  {
    std::ostringstream s;
    for (std::size_t i = 0; i < r.targets.size(); ++i)
      s << (i ? ", " : "") << r.targets[i];
    s << "  (publishing to " << r.publish_target << ")";
    row("targets", s.str());
  }
  {
    std::ostringstream s;
    s << count(r.established) << " established, " << count(r.failed) << " failed";
    if (r.slow)
      s << ", " << count(r.slow) << " slow (" << count(r.slow_closed_by_server)
        << " closed by the server)";
    if (r.dropped)
      s << ", " << count(r.dropped) << " dropped by the server";
    s << "; all established in " << fmt("%.2f s", r.establish_s);
    row("connections", s.str());
    row("connect time", percentile_line(r.connect));
    for (const auto& [why, n] : r.failures)
      row("", count(n) + " x " + why);
  }
  if (r.storm) {
    std::ostringstream s;
    s << count(r.resumed) << " resumed, " << count(r.resume_failed) << " failed, "
      << count(r.no_position) << " without a position; storm over in " << fmt("%.2f s", r.storm_s);
    row("reconnect", s.str());
    row("resume time", percentile_line(r.reconnect));
    std::ostringstream n;
    n << count(r.newcomers.accepted) << " of " << count(r.newcomers.attempted)
      << " new subscribers accepted during the storm";
    row("newcomers", n.str());
    row("newcomer time", percentile_line(r.newcomers.accept_ns));
    for (const auto& [why, k] : r.newcomers.failures)
      row("", count(k) + " x " + why);
  }
  if (r.publications || r.find_max) {
    std::ostringstream s;
    s << count(r.pub.sent) << " sent, " << count(r.pub.ok) << " ok, " << count(r.pub.failed)
      << " failed, " << count(r.pub.unknown) << " unknown; ";
    if (r.find_max)
      s << "in steps from " << fmt("%.0f/s", r.rate);
    else
      s << fmt("%.1f/s", r.achieved_rate) << " (asked " << fmt("%.1f/s", r.rate) << "; "
        << fmt("%.1f/s", r.acked_rate) << " acknowledged)";
    s << ", " << r.payload_bytes << " B payload";
    row("publications", s.str());
    row("publish rtt", percentile_line(r.pub.rtt));
    row("publish lag", "max " + ms(r.pub.lag.max()) + ", p99 " +
                         ms(r.pub.lag.value_at_quantile(0.99)) + " behind schedule");
    for (const auto& [why, n] : r.pub.errors)
      row("", count(n) + " x " + why);
    if (r.pub.offset_anomalies)
      row("", count(r.pub.offset_anomalies) + " publish answers with a non-consecutive offset");
    std::ostringstream d;
    d << count(r.expected) << " expected, " << count(r.received) << " received, loss "
      << count(r.loss) << ", duplicates " << count(r.duplicates) << ", out-of-order "
      << count(r.out_of_order) << ", gap notices " << count(r.gap_notices);
    row("deliveries", d.str());
    row("", fmt("%.0f deliveries/s", r.deliveries_per_s) +
              (r.offset_gaps ? ", " + count(r.offset_gaps) + " offsets skipped" : std::string{}) +
              (r.unparsed ? ", " + count(r.unparsed) + " unparsed events" : std::string{}) +
              (r.pub.broadcast
                 ? " (server ignores channels: every connection expects every publication)"
                 : std::string{}));
    row("latency", percentile_line(r.latency));
    for (const auto& [what, n] : r.notices)
      row("", count(n) + " x " + what);
  }
  if (r.find_max) {
    out << "  find-max steps:\n";
    out << "    " << std::left << std::setw(10) << "rate/s" << std::setw(11) << "achieved"
        << std::setw(14) << "deliveries/s" << std::setw(11) << "p50" << std::setw(11) << "p99"
        << std::setw(11) << "max" << std::setw(10) << "loss"
        << "verdict\n";
    for (const auto& s : r.steps) {
      out << "    " << std::left << std::setw(10) << fmt("%.0f", s.target_rate) << std::setw(11)
          << fmt("%.0f", s.achieved_rate) << std::setw(14) << fmt("%.0f", s.deliveries_per_s)
          << std::setw(11) << ms(s.latency.value_at_quantile(0.5)) << std::setw(11)
          << ms(s.latency.value_at_quantile(0.99)) << std::setw(11) << ms(s.latency.max())
          << std::setw(10) << count(s.expected > s.received ? s.expected - s.received : 0)
          << (s.pass ? "ok" : s.verdict) << "\n";
    }
    row("max rate", fmt("%.0f publications/s sustained", r.max_sustained_rate));
  }
  for (const auto& s : r.servers) {
    std::ostringstream o;
    o << "pid " << s.pid << (s.target.empty() ? "" : " (" + s.target + ")");
    if (!s.before.ok) {
      o << ": not readable";
      row("server", o.str());
      continue;
    }
    o << ": RSS " << mib(s.before.rss_bytes) << " before, " << mib(s.after_connect.rss_bytes)
      << " connected (" << fmt("%.1f KiB", s.bytes_per_connection() / 1024) << "/connection), peak "
      << mib(s.peak_rss_bytes) << ", end " << mib(s.end.rss_bytes);
    row("server", o.str());
    std::ostringstream c;
    c << fmt("%.2f s", s.end.cpu_s - s.before.cpu_s) << " CPU in total";
    if (s.publish_end.t_ns > s.publish_start.t_ns)
      c << ", " << fmt("%.2f s", s.publish_cpu_s()) << " while publishing ("
        << fmt("%.0f%% of one core", s.publish_cpu_pct()) << ")";
    c << ", " << s.end.threads << " threads, " << s.after_connect.open_files << " files open";
    row("", c.str());
  }
  {
    std::ostringstream g;
    g << fmt("%.2f s", r.generator_cpu_s) << " CPU in total";
    if (r.publish_s > 0)
      g << ", workers " << fmt("%.2f s", r.generator_publish_cpu_s) << " while publishing";
    g << ", workers' RSS " << mib(r.worker_rss_bytes);
    row("generator", g.str());
  }
  if (r.problems.empty()) {
    row("result", "PASS");
  } else {
    row("result", "FAIL");
    for (const auto& p : r.problems)
      row("", p);
  }
}

nlohmann::json to_json(const run_result& r) {
  nlohmann::json j;
  j["started_at"] = r.started_at;
  j["wall_s"] = r.wall_s;
  j["run"] = {{"scenario", r.scenario},
              {"transport", r.transport},
              {"targets", r.targets},
              {"publish_target", r.publish_target},
              {"connections", r.connections},
              {"channels", r.channels},
              {"user_channels", r.user_channels},
              {"workers", r.workers},
              {"source_addrs", r.source_addrs},
              {"payload_bytes", r.payload_bytes},
              {"rate", r.rate},
              {"publications", r.publications}};
  j["connections"] = {{"established", r.established},
                      {"failed", r.failed},
                      {"dropped", r.dropped},
                      {"slow", r.slow},
                      {"slow_closed_by_server", r.slow_closed_by_server},
                      {"establish_s", r.establish_s},
                      {"connect_ms", percentiles_ms(r.connect)},
                      {"failures", map_json(r.failures)}};
  if (r.storm)
    j["reconnect_storm"] = {{"resumed", r.resumed},
                            {"resume_failed", r.resume_failed},
                            {"no_position", r.no_position},
                            {"storm_s", r.storm_s},
                            {"resume_ms", percentiles_ms(r.reconnect)},
                            {"newcomers",
                             {{"attempted", r.newcomers.attempted},
                              {"accepted", r.newcomers.accepted},
                              {"failures", map_json(r.newcomers.failures)},
                              {"accept_ms", percentiles_ms(r.newcomers.accept_ns)}}}};
  j["publish"] = {{"sent", r.pub.sent},
                  {"ok", r.pub.ok},
                  {"failed", r.pub.failed},
                  {"unknown", r.pub.unknown},
                  {"publish_s", r.publish_s},
                  {"achieved_rate", r.achieved_rate},
                  {"acked_rate", r.acked_rate},
                  {"broadcast_server", r.pub.broadcast},
                  {"offset_anomalies", r.pub.offset_anomalies},
                  {"rtt_ms", percentiles_ms(r.pub.rtt)},
                  {"lag_ms", percentiles_ms(r.pub.lag)},
                  {"errors", map_json(r.pub.errors)}};
  j["deliveries"] = {{"expected", r.expected},
                     {"received", r.received},
                     {"loss", r.loss},
                     {"duplicates", r.duplicates},
                     {"out_of_order", r.out_of_order},
                     {"offset_gaps", r.offset_gaps},
                     {"gap_notices", r.gap_notices},
                     {"unparsed", r.unparsed},
                     {"per_second", r.deliveries_per_s},
                     {"notices", map_json(r.notices)}};
  j["latency_ms"] = percentiles_ms(r.latency);
  j["latency_histogram_ns"] = r.latency.to_json();
  auto servers = nlohmann::json::array();
  for (const auto& s : r.servers)
    servers.push_back({{"pid", s.pid},
                       {"target", s.target},
                       {"connections", s.connections},
                       {"bytes_per_connection", s.bytes_per_connection()},
                       {"peak_rss_bytes", s.peak_rss_bytes},
                       {"publish_cpu_s", s.publish_cpu_s()},
                       {"publish_cpu_pct", s.publish_cpu_pct()},
                       {"before", s.before.to_json()},
                       {"after_connect", s.after_connect.to_json()},
                       {"publish_start", s.publish_start.to_json()},
                       {"publish_end", s.publish_end.to_json()},
                       {"end", s.end.to_json()}});
  j["servers"] = std::move(servers);
  j["generator"] = {{"cpu_s", r.generator_cpu_s},
                    {"publish_cpu_s", r.generator_publish_cpu_s},
                    {"worker_rss_bytes", r.worker_rss_bytes}};
  if (r.find_max) {
    auto steps = nlohmann::json::array();
    for (const auto& s : r.steps)
      steps.push_back({{"target_rate", s.target_rate},
                       {"achieved_rate", s.achieved_rate},
                       {"published", s.published},
                       {"expected", s.expected},
                       {"received", s.received},
                       {"duplicates", s.duplicates},
                       {"out_of_order", s.out_of_order},
                       {"deliveries_per_s", s.deliveries_per_s},
                       {"latency_ms", percentiles_ms(s.latency)},
                       {"pass", s.pass},
                       {"verdict", s.verdict}});
    j["find_max"] = {{"steps", std::move(steps)}, {"max_sustained_rate", r.max_sustained_rate}};
  }
  j["pass"] = r.problems.empty();
  j["problems"] = r.problems;
  return j;
}

} // namespace herald::loadtest
