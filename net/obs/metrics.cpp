#include "net/obs/metrics.hpp"
#include "net/obs/metrics_redis.hpp"
#include "net/wire/enum_names.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#ifndef HERALD_VERSION
#define HERALD_VERSION "unknown"
#endif

namespace herald::net::metrics {

namespace {

constexpr std::size_t reason_count = close_reason_count;
constexpr std::size_t errc_slots = 256; // errc is a uint8_t

// Positions of the figures inside a shard.
enum slot : std::size_t {
  s_connects = 0,                                              // [transport]
  s_connections = s_connects + transport_count,                // gauge [transport]
  s_disconnects = s_connections + transport_count,             // [transport][reason]
  s_received = s_disconnects + transport_count * reason_count, // [source]
  s_delivered = s_received + source_count,                     // [transport]
  s_frames = s_delivered + transport_count,                    // [transport]
  s_bytes = s_frames + transport_count,                        // [transport]
  s_outbound = s_bytes + transport_count,                      // gauge
  s_recoveries = s_outbound + 1,                               // [succeeded, failed]
  s_channels = s_recoveries + 2,                               // gauge
  s_redis_reconnects = s_channels + 1,
  s_idempotent_replays = s_redis_reconnects + 1,
  s_version_suppressed = s_idempotent_replays + 1,
  s_redis_write_failures = s_version_suppressed + 1,
  s_conflated = s_redis_write_failures + 1,
  s_sse_cors_denied = s_conflated + 1,
  s_http_errors = s_sse_cors_denied + 1, // [errc]
  slot_count = s_http_errors + errc_slots,
};

// One thread's figures. Only the owning thread stores; scrapes load.
struct alignas(64) shard {
  std::atomic<std::int64_t> slots[slot_count];
  std::atomic<std::uint64_t> buckets[histogram_count][bucket_count + 1]; // not cumulative
  std::atomic<std::uint64_t> sum_ns[histogram_count];
  bool in_use = false; // guarded by pool::mtx
};

struct pool {
  std::mutex mtx;
  std::vector<std::unique_ptr<shard>> shards;
};

// Never destroyed: threads may record (and exit) during static destruction.
pool& the_pool() {
  static auto* p = new pool;
  return *p;
}

shard* acquire() {
  auto& p = the_pool();
  std::lock_guard<std::mutex> g{p.mtx};
  for (auto& s : p.shards)
    if (!s->in_use) {
      s->in_use = true; // the lock orders us after the previous owner's stores
      return s.get();
    }
  p.shards.push_back(std::make_unique<shard>());
  p.shards.back()->in_use = true;
  return p.shards.back().get();
}

// Gives the shard back (values kept) when its thread exits.
struct holder {
  shard* s = nullptr;
  ~holder() {
    if (!s)
      return;
    auto& p = the_pool();
    std::lock_guard<std::mutex> g{p.mtx};
    s->in_use = false;
  }
};
thread_local holder tl_shard;

inline shard& mine() noexcept {
  if (!tl_shard.s)
    tl_shard.s = acquire(); // once per thread: allocates under the lock
  return *tl_shard.s;
}

// Single writer: a load and a store, no read-modify-write instruction.
template <class T>
inline void bump(std::atomic<T>& a, T n) noexcept {
  a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

inline void add(std::size_t at, std::int64_t n) noexcept {
  bump(mine().slots[at], n);
}

std::atomic<int> redis_state{-1};
std::mutex redis_nodes_mtx;
std::vector<redis_node> redis_node_list;         // guarded by redis_nodes_mtx
std::atomic<std::uint64_t> redis_redirects[2]{}; // [0] MOVED, [1] ASK
std::atomic<int> redis_writable{1};
std::atomic<int> redis_problem_now{static_cast<int>(redis_problem::other)}; // before the first up
const std::int64_t start_ns = now_ns();
std::string the_version = HERALD_VERSION;

constexpr std::string_view bucket_labels[] = {
  "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01",
  "0.025", "0.05",   "0.1",     "0.25",   "0.5",   "1",      "2.5",   "5"};
static_assert(sizeof(bucket_labels) / sizeof(bucket_labels[0]) == bucket_count);

// -- summing ------------------------------------------------------------------

struct totals {
  std::array<std::int64_t, slot_count> slots{};
  std::uint64_t buckets[histogram_count][bucket_count + 1] = {};
  std::uint64_t sum_ns[histogram_count] = {};
};

totals sum_all() {
  totals t;
  auto& p = the_pool();
  std::lock_guard<std::mutex> g{p.mtx};
  for (const auto& s : p.shards) {
    for (std::size_t i = 0; i < slot_count; ++i)
      t.slots[i] += s->slots[i].load(std::memory_order_relaxed);
    for (std::size_t h = 0; h < histogram_count; ++h) {
      for (std::size_t b = 0; b <= bucket_count; ++b)
        t.buckets[h][b] += s->buckets[h][b].load(std::memory_order_relaxed);
      t.sum_ns[h] += s->sum_ns[h].load(std::memory_order_relaxed);
    }
  }
  return t;
}

// -- /proc ---------------------------------------------------------------------

struct process_figures {
  bool ok = false;
  double cpu_seconds = 0;
  double start_time_seconds = 0;
  std::uint64_t virtual_bytes = 0;
  std::uint64_t resident_bytes = 0;
  std::uint64_t open_fds = 0;
  std::uint64_t max_fds = 0;
};

process_figures read_process() {
  process_figures f;
  std::ifstream stat_file{"/proc/self/stat"};
  std::string line;
  if (!std::getline(stat_file, line))
    return f;
  // Fields after "(comm)", which may hold spaces: proc(5) numbers them from 3.
  auto close = line.rfind(')');
  if (close == std::string::npos)
    return f;
  std::istringstream in{line.substr(close + 2)};
  std::vector<std::string> fields;
  for (std::string tok; in >> tok;)
    fields.push_back(tok);
  if (fields.size() < 22)
    return f;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  auto field = [&](int n) { return std::stoull(fields[static_cast<std::size_t>(n - 3)]); };
  try {
    f.cpu_seconds = static_cast<double>(field(14) + field(15)) / ticks; // utime + stime
    f.virtual_bytes = field(23);
    f.resident_bytes = field(24) * page;
    double boot = 0;
    std::ifstream system_stat{"/proc/stat"};
    for (std::string l; std::getline(system_stat, l);)
      if (l.rfind("btime ", 0) == 0)
        boot = std::stod(l.substr(6));
    f.start_time_seconds = boot + static_cast<double>(field(22)) / ticks;
  } catch (const std::exception&) {
    return f;
  }
  if (DIR* d = opendir("/proc/self/fd")) {
    while (auto* e = readdir(d))
      if (e->d_name[0] != '.')
        ++f.open_fds;
    closedir(d);
    --f.open_fds; // the descriptor reading the directory
  }
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0)
    f.max_fds = lim.rlim_cur;
  f.ok = true;
  return f;
}

// -- writing ------------------------------------------------------------------

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

class writer {
public:
  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  // `labels` is `k="v",k2="v2"` (values from our enums: nothing to escape).
  void sample(std::string_view name, std::string_view labels, const std::string& value) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      out_ += labels;
      out_ += '}';
    }
    out_ += ' ';
    out_ += value;
    out_ += '\n';
  }
  void sample(std::string_view name, std::string_view labels, std::int64_t value) {
    sample(name, labels, std::to_string(value));
  }
  std::string take() { return std::move(out_); }

private:
  std::string out_;
};

std::string label(std::string_view key, std::string_view value) {
  std::string s{key};
  s += "=\"";
  s += value;
  s += '"';
  return s;
}

void write_histogram(writer& w, const totals& t, histogram h, std::string_view name,
                     std::string_view help) {
  auto i = static_cast<std::size_t>(h);
  std::string n{name};
  w.family(n, "histogram", help);
  std::uint64_t cumulative = 0;
  for (std::size_t b = 0; b < bucket_count; ++b) {
    cumulative += t.buckets[i][b];
    w.sample(n + "_bucket", label("le", bucket_labels[b]), static_cast<std::int64_t>(cumulative));
  }
  cumulative += t.buckets[i][bucket_count];
  w.sample(n + "_bucket", label("le", "+Inf"), static_cast<std::int64_t>(cumulative));
  w.sample(n + "_sum", {}, number(static_cast<double>(t.sum_ns[i]) / 1e9));
  // The count is the +Inf bucket, so the two always agree within a scrape.
  w.sample(n + "_count", {}, static_cast<std::int64_t>(cumulative));
}

} // namespace

// -- recording ------------------------------------------------------------------

void connection_opened(transport t) noexcept {
  auto i = static_cast<std::size_t>(t);
  auto& s = mine();
  bump(s.slots[s_connects + i], std::int64_t{1});
  bump(s.slots[s_connections + i], std::int64_t{1});
}

void connection_closed(transport t, close_reason r) noexcept {
  auto i = static_cast<std::size_t>(t);
  auto& s = mine();
  bump(s.slots[s_disconnects + i * reason_count + static_cast<std::size_t>(r)], std::int64_t{1});
  bump(s.slots[s_connections + i], std::int64_t{-1});
}

void publications_received(source src, std::uint64_t n) noexcept {
  add(s_received + static_cast<std::size_t>(src), static_cast<std::int64_t>(n));
}

void delivered(transport t) noexcept {
  add(s_delivered + static_cast<std::size_t>(t), 1);
}

void written(transport t, std::uint64_t frames, std::uint64_t bytes) noexcept {
  auto i = static_cast<std::size_t>(t);
  auto& s = mine();
  bump(s.slots[s_frames + i], static_cast<std::int64_t>(frames));
  bump(s.slots[s_bytes + i], static_cast<std::int64_t>(bytes));
}

void outbound_bytes(std::int64_t delta) noexcept {
  add(s_outbound, delta);
}

void recovery(bool succeeded) noexcept {
  add(s_recoveries + (succeeded ? 0 : 1), 1);
}

void channels(std::int64_t delta) noexcept {
  add(s_channels, delta);
}

void observe(histogram h, std::int64_t ns) noexcept {
  if (ns < 0)
    ns = 0;
  std::size_t b = 0;
  while (b < bucket_count && ns > bucket_bounds_ns[b]) // `le` is inclusive
    ++b;
  auto i = static_cast<std::size_t>(h);
  auto& s = mine();
  bump(s.buckets[i][b], std::uint64_t{1});
  bump(s.sum_ns[i], static_cast<std::uint64_t>(ns));
}

void redis_reconnect() noexcept {
  add(s_redis_reconnects, 1);
}

void set_redis_nodes(std::vector<redis_node> nodes) {
  std::lock_guard<std::mutex> g{redis_nodes_mtx};
  redis_node_list = std::move(nodes);
}

std::vector<redis_node> redis_nodes() {
  std::lock_guard<std::mutex> g{redis_nodes_mtx};
  return redis_node_list;
}

void redis_redirect(bool ask) noexcept {
  redis_redirects[ask ? 1 : 0].fetch_add(1, std::memory_order_relaxed);
}

void set_redis_up(bool up) noexcept {
  redis_state.store(up ? 1 : 0, std::memory_order_relaxed);
}

std::string_view to_string(redis_problem p) noexcept {
  static_assert(static_cast<std::size_t>(redis_problem::other) + 1 == redis_problem_count);
  return enum_name<redis_problem::none, redis_problem::other>(
    p,
    {"none", "connection_refused", "timeout", "resolve", "auth", "noperm", "replicas", "cluster",
     "other"},
    "other");
}

redis_problem classify_redis_problem(std::string_view reason) noexcept {
  auto has = [reason](std::string_view what) {
    return reason.find(what) != std::string_view::npos;
  };
  // Most specific first: "NOPERM" inside "SUBSCRIBE of ... failed: NOPERM ...".
  if (has("NOPERM"))
    return redis_problem::noperm;
  if (has("WRONGPASS") || has("NOAUTH") || has("AUTH failed") || has("invalid password"))
    return redis_problem::auth;
  if (has("refused"))
    return redis_problem::connection_refused;
  if (has("resolve"))
    return redis_problem::resolve;
  if (has("timeout") || has("timed out"))
    return redis_problem::timeout;
  if (has("replica"))
    return redis_problem::replicas;
  if (has("slot map") || has("Cluster seed") || has("not part of a cluster"))
    return redis_problem::cluster;
  return reason.empty() ? redis_problem::none : redis_problem::other;
}

void set_redis_problem(redis_problem p) noexcept {
  redis_problem_now.store(static_cast<int>(p), std::memory_order_relaxed);
}

void idempotent_replay() noexcept {
  add(s_idempotent_replays, 1);
}

void sse_cors_denied() noexcept {
  add(s_sse_cors_denied, 1);
}

void version_suppressed() noexcept {
  add(s_version_suppressed, 1);
}

void conflated(std::uint64_t n) noexcept {
  add(s_conflated, static_cast<std::int64_t>(n));
}

void set_redis_writable(bool writable) noexcept {
  if (!writable && redis_writable.exchange(0, std::memory_order_relaxed) != 0)
    add(s_redis_write_failures, 1);
  else if (writable)
    redis_writable.store(1, std::memory_order_relaxed);
}

void http_error(errc e) noexcept {
  add(s_http_errors + static_cast<std::size_t>(e), 1);
}

void set_version(std::string v) {
  the_version = std::move(v);
}

const std::string& version() noexcept {
  return the_version;
}

std::string_view to_string(transport t) noexcept {
  return t == transport::sse ? "sse" : "ws";
}

std::string_view to_string(source s) noexcept {
  return s == source::http ? "http" : "redis";
}

// -- reading ------------------------------------------------------------------

snapshot_t snapshot() {
  auto t = sum_all();
  snapshot_t s;
  for (std::size_t i = 0; i < transport_count; ++i) {
    s.connections[i] = t.slots[s_connections + i];
    s.connects[i] = static_cast<std::uint64_t>(t.slots[s_connects + i]);
    s.deliveries[i] = static_cast<std::uint64_t>(t.slots[s_delivered + i]);
    s.frames_written[i] = static_cast<std::uint64_t>(t.slots[s_frames + i]);
    s.bytes_written[i] = static_cast<std::uint64_t>(t.slots[s_bytes + i]);
  }
  for (std::size_t i = 0; i < source_count; ++i)
    s.publications_received[i] = static_cast<std::uint64_t>(t.slots[s_received + i]);
  s.channels = t.slots[s_channels];
  s.outbound_bytes = t.slots[s_outbound];
  s.redis_up = redis_state.load(std::memory_order_relaxed);
  s.redis_reconnects = static_cast<std::uint64_t>(t.slots[s_redis_reconnects]);
  s.uptime_seconds = static_cast<double>(now_ns() - start_ns) / 1e9;
  for (std::size_t b = 0; b <= bucket_count; ++b)
    s.publish_to_write[b] = t.buckets[static_cast<std::size_t>(histogram::publish_to_write)][b];
  return s;
}

std::string render() {
  auto t = sum_all();
  writer w;
  constexpr transport transports[] = {transport::sse, transport::ws};
  // A family with one sample per transport, read from the slots from `base`.
  auto per_transport = [&](const char* name, const char* type, const char* help, std::size_t base) {
    w.family(name, type, help);
    for (auto tr : transports)
      w.sample(name, label("transport", to_string(tr)),
               t.slots[base + static_cast<std::size_t>(tr)]);
  };

  w.family("herald_build_info", "gauge", "Herald build information (always 1).");
  w.sample("herald_build_info", label("version", the_version), 1);

  per_transport("herald_connections", "gauge", "Open client connections.", s_connections);

  per_transport("herald_connects_total", "counter", "Client connections opened.", s_connects);

  w.family("herald_disconnects_total", "counter", "Client connections closed, by why they ended.");
  for (auto tr : transports)
    for (std::size_t r = 0; r < reason_count; ++r)
      w.sample("herald_disconnects_total",
               label("transport", to_string(tr)) + "," +
                 label("reason", net::to_string(static_cast<close_reason>(r))),
               t.slots[s_disconnects + static_cast<std::size_t>(tr) * reason_count + r]);

  w.family("herald_channels", "gauge", "Channels with an actor on this instance.");
  w.sample("herald_channels", {}, t.slots[s_channels]);

  w.family("herald_publications_received_total", "counter",
           "Publications received (one per channel), from HTTP publishers or from Redis.");
  for (auto src : {source::http, source::redis})
    w.sample("herald_publications_received_total", label("source", to_string(src)),
             t.slots[s_received + static_cast<std::size_t>(src)]);

  per_transport("herald_deliveries_total", "counter",
                "Publications handed to a client connection (live and replayed).", s_delivered);

  per_transport(
    "herald_frames_written_total", "counter",
    "Frames (SSE event blocks and comments, WebSocket messages) written to client sockets.",
    s_frames);

  per_transport("herald_bytes_written_total", "counter",
                "Bytes written to client sockets after the handshake (SSE response head included; "
                "WebSocket payload bytes).",
                s_bytes);

  w.family("herald_outbound_buffer_bytes", "gauge",
           "Bytes queued for clients and not yet written, summed over connections.");
  w.sample("herald_outbound_buffer_bytes", {}, t.slots[s_outbound]);

  w.family("herald_recoveries_total", "counter",
           "Subscriptions that asked to resume from a stream position: succeeded (all missed "
           "publications replayed) or failed (an explicit gap).");
  w.sample("herald_recoveries_total", label("result", "succeeded"), t.slots[s_recoveries]);
  w.sample("herald_recoveries_total", label("result", "failed"), t.slots[s_recoveries + 1]);

  write_histogram(w, t, histogram::publish_to_write, "herald_publish_to_write_seconds",
                  "Time from a publication being accepted by this instance (HTTP publish "
                  "parsed, or Redis message received) to its frame being written to a client "
                  "socket, per delivery.");

  w.family("herald_http_errors_total", "counter",
           "HTTP requests refused, by error code (docs/protocol.md, Errors).");
  const auto& internal_row = info(errc::internal);
  for (std::size_t e = 1; e < errc_slots; ++e) {
    auto code = static_cast<errc>(e);
    const auto& row = info(code);
    // Every known code, always (unknown values map to the internal row).
    if (&row == &internal_row && code != errc::internal && t.slots[s_http_errors + e] == 0)
      continue;
    w.sample("herald_http_errors_total", label("code", row.code), t.slots[s_http_errors + e]);
  }

  w.family("herald_publish_idempotent_replays_total", "counter",
           "Publishes to a channel that repeated an idempotency key within the window: answered "
           "with the first publication's offset, nothing delivered.");
  w.sample("herald_publish_idempotent_replays_total", {}, t.slots[s_idempotent_replays]);

  w.family("herald_publish_version_suppressed_total", "counter",
           "Publishes to a channel whose version was not above the channel's last: neither "
           "stored nor delivered.");
  w.sample("herald_publish_version_suppressed_total", {}, t.slots[s_version_suppressed]);

  w.family("herald_conflated_publications_total", "counter",
           "Publications dropped from a client's outbound queue by the overflow policy conflate: "
           "a newer publication of the same subscription replaced them before they were handed "
           "to the socket.");
  w.sample("herald_conflated_publications_total", {}, t.slots[s_conflated]);

  w.family("herald_sse_cors_denied_total", "counter",
           "SSE requests from a browser origin that is neither this server nor in "
           "--allowed-origins: answered without Access-Control-Allow-Origin, so the browser "
           "refuses the stream.");
  w.sample("herald_sse_cors_denied_total", {}, t.slots[s_sse_cors_denied]);

  if (auto state = redis_state.load(std::memory_order_relaxed); state >= 0) {
    w.family("herald_redis_writable", "gauge",
             "Cluster mode: 1 while Redis stores publications, 0 after a write failed (read-only "
             "replica, out of memory, script error) until one succeeds; /readyz says 503 then.");
    w.sample("herald_redis_writable", {}, redis_writable.load(std::memory_order_relaxed));
    w.family("herald_redis_write_failures_total", "counter",
             "Cluster mode: times Redis went from storing publications to refusing them.");
    w.sample("herald_redis_write_failures_total", {}, t.slots[s_redis_write_failures]);
    w.family("herald_redis_up", "gauge",
             "Cluster mode: 1 while the Redis connections are up, 0 while not.");
    w.sample("herald_redis_up", {}, state);
    w.family("herald_redis_down_reason", "gauge",
             "Cluster mode: 1 for the reason Redis is not usable now (connection_refused, timeout, "
             "resolve, auth, noperm, replicas, cluster, other), 0 for the others; all 0 while up "
             "and ready. The full text is in /readyz and the log.");
    for (std::size_t i = 1; i < redis_problem_count; ++i)
      w.sample("herald_redis_down_reason",
               label("reason", to_string(static_cast<redis_problem>(i))),
               redis_problem_now.load(std::memory_order_relaxed) == static_cast<int>(i) ? 1 : 0);
    w.family("herald_redis_reconnects_total", "counter",
             "Cluster mode: times the Redis connections were lost and re-established.");
    w.sample("herald_redis_reconnects_total", {}, t.slots[s_redis_reconnects]);
    write_histogram(w, t, histogram::redis_command_latency, "herald_redis_command_duration_seconds",
                    "Cluster mode: time from a Redis command being sent to its reply.");
    // A Redis Cluster: one sample per node (node names are host:port, nothing to escape).
    if (auto nodes = redis_nodes(); !nodes.empty()) {
      auto node_label = [](const redis_node& n) { return "node=\"" + n.node + "\""; };
      w.family("herald_redis_node_connected", "gauge",
               "Redis Cluster: 1 while this instance's connection to the node is up.");
      for (const auto& n : nodes)
        w.sample("herald_redis_node_connected", node_label(n), n.connected ? 1 : 0);
      w.family("herald_redis_node_slots", "gauge",
               "Redis Cluster: hash slots the node serves in this instance's slot map.");
      for (const auto& n : nodes)
        w.sample("herald_redis_node_slots", node_label(n), static_cast<std::int64_t>(n.slots));
      w.family("herald_redis_node_subscriptions", "gauge",
               "Redis Cluster: pub/sub channels this instance's subscriber holds on the node.");
      for (const auto& n : nodes)
        w.sample("herald_redis_node_subscriptions", node_label(n),
                 static_cast<std::int64_t>(n.subscriptions));
      w.family("herald_redis_node_reconnects_total", "counter",
               "Redis Cluster: connections to the node re-established.");
      for (const auto& n : nodes)
        w.sample("herald_redis_node_reconnects_total", node_label(n),
                 static_cast<std::int64_t>(n.reconnects));
      w.family("herald_redis_redirects_total", "counter",
               "Redis Cluster: MOVED and ASK redirections followed.");
      w.sample("herald_redis_redirects_total", label("kind", "moved"),
               static_cast<std::int64_t>(redis_redirects[0].load(std::memory_order_relaxed)));
      w.sample("herald_redis_redirects_total", label("kind", "ask"),
               static_cast<std::int64_t>(redis_redirects[1].load(std::memory_order_relaxed)));
    }
  }

  if (auto p = read_process(); p.ok) {
    w.family("process_cpu_seconds_total", "counter", "User and system CPU time spent in seconds.");
    w.sample("process_cpu_seconds_total", {}, number(p.cpu_seconds));
    w.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    w.sample("process_resident_memory_bytes", {}, static_cast<std::int64_t>(p.resident_bytes));
    w.family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
    w.sample("process_virtual_memory_bytes", {}, static_cast<std::int64_t>(p.virtual_bytes));
    w.family("process_open_fds", "gauge", "Number of open file descriptors.");
    w.sample("process_open_fds", {}, static_cast<std::int64_t>(p.open_fds));
    w.family("process_max_fds", "gauge", "Maximum number of open file descriptors.");
    w.sample("process_max_fds", {}, static_cast<std::int64_t>(p.max_fds));
    w.family("process_start_time_seconds", "gauge",
             "Start time of the process since unix epoch in seconds.");
    w.sample("process_start_time_seconds", {}, number(p.start_time_seconds));
  }
  return w.take();
}

} // namespace herald::net::metrics
