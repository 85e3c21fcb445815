#include "loadtest/options.hpp"

#include "net/wire/enum_names.hpp"

#include <boost/asio/ip/address_v4.hpp>

#include <sys/resource.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <map>
#include <sstream>

namespace herald::loadtest {

namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, ','))
    if (!item.empty())
      out.push_back(item);
  return out;
}

bool to_double(const std::string& s, double& out) {
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return !s.empty() && end && *end == '\0' && std::isfinite(out);
}

bool to_u64(const std::string& s, std::uint64_t& out) {
  if (s.empty() || s[0] == '-')
    return false;
  char* end = nullptr;
  out = std::strtoull(s.c_str(), &end, 10);
  return end && *end == '\0';
}

} // namespace

const char* to_string(scenario s) noexcept {
  // Static text: each name is a literal, so .data() is NUL-terminated.
  return net::enum_name<scenario::idle, scenario::cluster>(
           s, {"idle", "fanout", "spread", "slow", "reconnect-storm", "cluster"}, "?")
    .data();
}

std::string usage() {
  return R"(herald-loadtest: load generator for Herald (wire protocol only; loopback targets only)

usage: herald-loadtest [options]

Scenario
  --scenario NAME        idle | fanout | spread | slow | reconnect-storm | cluster (fanout)
                           idle             connections only; hold --hold-seconds; memory per connection
                           fanout           one channel, every subscriber on it
                           spread           many channels; each client on a stream: and a user: channel
                           slow             --slow-share of subscribers stop reading after connecting
                           reconnect-storm  mid-run every client drops and resumes with its cursor
                           cluster          publish on --publish-target, subscribers on every target
  --find-max             step the rate up (x --step-factor every --step-seconds) until loss,
                         p99 > --max-p99-ms or the publisher falls behind; report the max sustained rate
Connections
  --connections N        subscriber connections (1000)
  --transport T          sse | ws | centrifugo | centrifugo-protobuf | mix (sse);
                         centrifugo: Centrifugo's client protocol on
                         /connection/websocket in JSON, centrifugo-protobuf in Protobuf
  --ws-deflate           WebSocket connections offer permessage-deflate (RFC 7692)
                         and inflate what comes compressed
  --centrifugo-delta     centrifugo transport: subscribe with delta "fossil" and
                         apply the Fossil deltas (net/wire/fossil_delta.hpp)
  --filter               every subscription has a filter that passes every publication
                         (SSE ?event=, /v1/ws "filter", Centrifugo JSON "tf" on the
                         publisher's event name): the same run, plus one filter
                         evaluation per delivery (docs/protocol.md "Filters")
  --resume-on-drop       a connection the server closes resumes with its position
                         (within 250 ms, as a client's reconnect would; counted as
                         dropped all the same)
  --channels C           stream channels (fanout 1, spread connections/10, others 10)
  --workers W            worker processes holding the connections (one per 15,000)
  --source-addrs LIST    loopback source addresses, round robin (127.0.0.1)
  --ramp-rate R          new connections per second, all workers together (2000)
  --connect-timeout S    an attempt not established by then fails (10)
Publishing
  --target LIST          host:port[,host:port...]: servers; subscribers spread over them (127.0.0.1:8080)
  --publish-target H:P   where publications go (first target)
  --publications M       publications to send (scenario default 1000-2000)
  --rate R               publications per second (fanout 100, others 200)
  --payload-bytes B      size of each publication's data (128; slow 1024)
  --publish-conns P      publisher keep-alive connections (2)
  --publish-inflight K   pipelined requests per publisher connection (8)
  --step-seconds S, --step-factor F, --max-p99-ms MS   --find-max steps (5, 1.5, 1000)
Timing
  --hold-seconds S       idle: how long to hold the connections (10)
  --slow-share X         slow: share of subscribers that never read (0.1)
  --settle-ms MS         pause after connecting, before publishing (500)
  --drain-seconds S      after publishing, wait this long without progress for stragglers (5)
  --duration S           hard cap on the whole run (180)
Measuring and output
  --server-pids LIST     server PIDs to sample (RSS, CPU) from /proc; same order as --target
  --json                 print the report as JSON instead of a table
  --json-file PATH       also write the JSON report to PATH
  --svg PATH             write a latency percentile plot (SVG)
  --throughput-svg PATH  write deliveries/s, publications/s and open connections over time (SVG)
  --channel-prefix P     stream channel names are stream:<P>-<i> (lt)
  --seed N               seed for user accounts and masks (random)
  --quiet                no progress lines on stderr
  --help

Exit status: 0 all checks passed; 1 loss, duplicates, reordering, gap notices, connect
failures or publish errors; 2 bad options; 3 runtime error.
)";
}

bool split_host_port(const std::string& text, std::string& host, unsigned& port) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return false;
  host = text.substr(0, colon);
  if (host == "localhost")
    host = "127.0.0.1";
  std::uint64_t p = 0;
  if (!to_u64(text.substr(colon + 1), p) || p == 0 || p > 65535)
    return false;
  port = static_cast<unsigned>(p);
  return true;
}

bool is_loopback_v4(const std::string& host) noexcept {
  if (host == "localhost")
    return true;
  boost::system::error_code ec;
  auto a = boost::asio::ip::make_address_v4(host, ec);
  return !ec && a.is_loopback();
}

std::string parse_options(int argc, char** argv, options& o, bool& help) {
  help = false;
  using setter = std::function<std::string(const std::string&)>;
  auto num = [](double& field, double min) -> setter {
    return [&field, min](const std::string& v) -> std::string {
      double d = 0;
      if (!to_double(v, d) || d < min)
        return "expects a number >= " + std::to_string(min);
      field = d;
      return {};
    };
  };
  auto u64 = [](std::uint64_t& field) -> setter {
    return [&field](const std::string& v) -> std::string {
      return to_u64(v, field) ? std::string{} : std::string{"expects a whole number"};
    };
  };
  auto uns = [](auto& field) -> setter {
    return [&field](const std::string& v) -> std::string {
      std::uint64_t x = 0;
      if (!to_u64(v, x) || x > 0xffffffffu)
        return "expects a whole number";
      field = static_cast<std::remove_reference_t<decltype(field)>>(x);
      return {};
    };
  };
  auto str = [](std::string& field) -> setter {
    return [&field](const std::string& v) -> std::string {
      field = v;
      return {};
    };
  };
  std::uint64_t payload = 0;
  std::map<std::string, setter> with_value{
    {"scenario",
     [&](const std::string& v) -> std::string {
       static const std::map<std::string, scenario> names{
         {"idle", scenario::idle},
         {"fanout", scenario::fanout},
         {"spread", scenario::spread},
         {"slow", scenario::slow},
         {"reconnect-storm", scenario::reconnect_storm},
         {"cluster", scenario::cluster}};
       auto it = names.find(v);
       if (it == names.end())
         return "unknown scenario";
       o.scen = it->second;
       return {};
     }},
    {"transport",
     [&](const std::string& v) -> std::string {
       if (v != "sse" && v != "ws" && v != "mix" && v != "centrifugo" && v != "centrifugo-protobuf")
         return "expects sse, ws, centrifugo, centrifugo-protobuf or mix";
       o.transport = v;
       return {};
     }},
    {"target",
     [&](const std::string& v) -> std::string {
       o.targets = split_list(v);
       return o.targets.empty() ? "expects host:port[,host:port...]" : "";
     }},
    {"publish-target", str(o.publish_target)},
    {"source-addrs",
     [&](const std::string& v) -> std::string {
       o.source_addrs = split_list(v);
       return o.source_addrs.empty() ? "expects addresses" : "";
     }},
    {"connections", u64(o.connections)},
    {"channels", uns(o.channels)},
    {"workers", uns(o.workers)},
    {"ramp-rate", num(o.ramp_rate, 1)},
    {"publications", u64(o.publications)},
    {"rate", num(o.rate, 0.001)},
    {"payload-bytes", u64(payload)},
    {"publish-conns", uns(o.publish_conns)},
    {"publish-inflight", uns(o.publish_inflight)},
    {"step-seconds", num(o.step_seconds, 0.1)},
    {"step-factor", num(o.step_factor, 1.01)},
    {"max-p99-ms", num(o.max_p99_ms, 0)},
    {"hold-seconds", num(o.hold_seconds, 0)},
    {"slow-share", num(o.slow_share, 0)},
    {"duration", num(o.duration, 1)},
    {"drain-seconds", num(o.drain_seconds, 0)},
    {"settle-ms", num(o.settle_ms, 0)},
    {"connect-timeout", num(o.connect_timeout, 0.1)},
    {"server-pids",
     [&](const std::string& v) -> std::string {
       o.server_pids.clear();
       for (const auto& p : split_list(v)) {
         std::uint64_t x = 0;
         if (!to_u64(p, x) || x == 0 || x > 0x7fffffff)
           return "expects PIDs";
         o.server_pids.push_back(static_cast<int>(x));
       }
       return {};
     }},
    {"json-file", str(o.json_file)},
    {"svg", str(o.svg_file)},
    {"throughput-svg", str(o.throughput_svg_file)},
    {"channel-prefix", str(o.channel_prefix)},
    {"seed", u64(o.seed)},
  };
  std::map<std::string, bool*> flags{
    {"find-max", &o.find_max}, {"json", &o.json},         {"quiet", &o.quiet},
    {"worker", &o.worker},     {"ws-deflate", &o.ws_deflate},
    {"centrifugo-delta", &o.centrifugo_delta}, {"resume-on-drop", &o.resume_on_drop},
    {"filter", &o.filter}};

  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help = true;
      return {};
    }
    if (arg.rfind("--", 0) != 0)
      return "unexpected argument '" + arg + "'";
    std::string name = arg.substr(2);
    std::string value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (auto f = flags.find(name); f != flags.end()) {
      if (has_value)
        return "--" + name + " takes no value";
      *f->second = true;
      continue;
    }
    auto it = with_value.find(name);
    if (it == with_value.end())
      return "unknown option --" + name;
    if (!has_value) {
      if (i + 1 >= argc)
        return "--" + name + " needs a value";
      value = argv[++i];
    }
    if (auto err = it->second(value); !err.empty())
      return "--" + name + " " + err + " (got '" + value + "')";
  }
  o.payload_bytes = static_cast<std::size_t>(payload);
  return {};
}

std::string finalize_options(options& o) {
  // Scenario presets for what the command line left unset.
  struct preset {
    std::uint32_t channels;
    std::uint64_t publications;
    double rate;
    std::size_t payload;
  };
  // One row per scenario, in the enum's order: idle, fanout, spread (its
  // channels: one per ten connections, at least 2), slow, reconnect-storm,
  // cluster.
  static constexpr preset presets[] = {{10, 0, 1, 128},      {1, 1000, 100, 128},
                                       {0, 2000, 200, 128},  {1, 2000, 200, 1024},
                                       {10, 2000, 200, 128}, {1, 1000, 100, 128}};
  static_assert(std::size(presets) == static_cast<std::size_t>(scenario::cluster) + 1);
  preset p = presets[static_cast<std::size_t>(o.scen)];
  if (o.scen == scenario::spread)
    p.channels = static_cast<std::uint32_t>(std::max<std::uint64_t>(2, o.connections / 10));
  if (o.channels == 0)
    o.channels = p.channels;
  if (o.publications == 0 && o.scen != scenario::idle)
    o.publications = p.publications;
  if (o.scen == scenario::idle)
    o.publications = 0;
  if (o.rate == 0)
    o.rate = p.rate;
  if (o.payload_bytes == 0)
    o.payload_bytes = p.payload;
  if (o.scen == scenario::spread && o.channels < 2)
    return "--scenario spread needs --channels >= 2";
  if (o.scen != scenario::slow)
    o.slow_share = 0;
  if (o.slow_share >= 1)
    return "--slow-share must be below 1";
  if (o.connections == 0)
    return "--connections must be at least 1";
  if (o.payload_bytes > 60000)
    return "--payload-bytes must be at most 60000 (Herald's publish limit is 64 KiB)";
  if (o.publish_conns == 0 || o.publish_inflight == 0)
    return "--publish-conns and --publish-inflight must be at least 1";
  if (o.find_max && o.scen == scenario::idle)
    return "--find-max needs a scenario that publishes";

  // Loopback only: this tool never sends traffic anywhere else.
  for (auto& t : o.targets) {
    std::string host;
    unsigned port = 0;
    if (!split_host_port(t, host, port))
      return "bad target '" + t + "' (expects host:port)";
    if (!is_loopback_v4(host))
      return "refusing target '" + t + "': only 127.0.0.0/8 loopback targets are allowed";
    t = host + ":" + std::to_string(port);
  }
  if (o.publish_target.empty()) {
    o.publish_target = o.targets.front();
  } else {
    std::string host;
    unsigned port = 0;
    if (!split_host_port(o.publish_target, host, port))
      return "bad --publish-target '" + o.publish_target + "'";
    if (!is_loopback_v4(host))
      return "refusing --publish-target '" + o.publish_target + "': loopback only";
    o.publish_target = host + ":" + std::to_string(port);
  }
  for (auto& s : o.source_addrs) {
    if (s == "localhost")
      s = "127.0.0.1";
    if (!is_loopback_v4(s))
      return "refusing source address '" + s + "': only 127.0.0.0/8 is allowed";
  }
  if (o.scen == scenario::cluster && o.targets.size() < 2)
    return "--scenario cluster needs at least two --target servers";

  // One process holds at most RLIMIT_NOFILE files: spread the connections.
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  std::uint64_t hard = rl.rlim_max == RLIM_INFINITY ? 1u << 20 : rl.rlim_max;
  std::uint64_t per_worker_max = hard > 200 ? hard - 100 : 100;
  std::uint64_t per_worker = std::min<std::uint64_t>(15000, per_worker_max);
  if (o.workers == 0)
    o.workers = static_cast<unsigned>((o.connections + per_worker - 1) / per_worker);
  if (o.workers == 0)
    o.workers = 1;
  if (o.workers > o.connections)
    o.workers = static_cast<unsigned>(o.connections);
  if (o.workers > 64)
    return "--workers must be at most 64";
  if ((o.connections + o.workers - 1) / o.workers > per_worker_max)
    return "too many connections per worker for the open-file limit (" + std::to_string(hard) +
           "): raise --workers";
  return {};
}

} // namespace herald::loadtest
