#include "net/obs/metrics.hpp"

#include <catch2/catch.hpp>

#include "net/obs/status.hpp"
#include "net/obs/metrics_redis.hpp"

#include <nlohmann/json.hpp>

#include <regex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace metrics = herald::net::metrics;
using herald::net::close_reason;

namespace {

// The value of the sample `series` (name plus its {labels}, exactly as
// written) in an exposition; fails the test when it is missing.
double value_of(const std::string& text, const std::string& series) {
  auto at = text.find("\n" + series + " ");
  REQUIRE(at != std::string::npos);
  auto start = at + 1 + series.size() + 1;
  return std::stod(text.substr(start, text.find('\n', start) - start));
}

double scrape(const std::string& series) {
  return value_of(metrics::render(), series);
}

} // namespace

TEST_CASE("counters and gauges move by what is recorded", "[metrics]") {
  auto before_open = scrape(R"(herald_connections{transport="ws"})");
  auto before_connects = scrape(R"(herald_connects_total{transport="ws"})");
  auto before_slow = scrape(R"(herald_disconnects_total{transport="ws",reason="slow_client"})");
  metrics::connection_opened(metrics::transport::ws);
  metrics::connection_opened(metrics::transport::ws);
  metrics::connection_closed(metrics::transport::ws, close_reason::slow_client);
  auto text = metrics::render();
  CHECK(value_of(text, R"(herald_connections{transport="ws"})") == before_open + 1);
  CHECK(value_of(text, R"(herald_connects_total{transport="ws"})") == before_connects + 2);
  CHECK(value_of(text, R"(herald_disconnects_total{transport="ws",reason="slow_client"})") ==
        before_slow + 1);
  // Every reason is present (0 or more), auth included.
  for (auto r : {"client", "slow_client", "heartbeat_timeout", "write_timeout", "protocol_error",
                 "policy", "shutdown", "auth"})
    CHECK(text.find(std::string{R"(herald_disconnects_total{transport="sse",reason=")"} + r +
                    "\"}") != std::string::npos);
  metrics::connection_closed(metrics::transport::ws, close_reason::auth);
  CHECK(scrape(R"(herald_disconnects_total{transport="ws",reason="auth"})") >= 1);
}

TEST_CASE("figures recorded on many threads are all summed, also after the threads ended",
          "[metrics]") {
  auto before = scrape(R"(herald_deliveries_total{transport="sse"})");
  auto before_bytes = scrape(R"(herald_bytes_written_total{transport="sse"})");
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([] {
      for (int i = 0; i < 100'000; ++i) {
        metrics::delivered(metrics::transport::sse);
        metrics::written(metrics::transport::sse, 1, 10);
      }
    });
  for (auto& t : threads)
    t.join();
  // Shards of ended threads are reused by new ones and keep their sums.
  std::thread([] { metrics::delivered(metrics::transport::sse); }).join();
  CHECK(scrape(R"(herald_deliveries_total{transport="sse"})") == before + 800'001);
  CHECK(scrape(R"(herald_bytes_written_total{transport="sse"})") == before_bytes + 8'000'000);
}

TEST_CASE("histograms are cumulative, with +Inf equal to the count and the sum in seconds",
          "[metrics]") {
  using metrics::histogram;
  auto text0 = metrics::render();
  auto b0 = value_of(text0, R"(herald_publish_to_write_seconds_bucket{le="5e-05"})");
  auto b1 = value_of(text0, R"(herald_publish_to_write_seconds_bucket{le="0.001"})");
  auto inf = value_of(text0, R"(herald_publish_to_write_seconds_bucket{le="+Inf"})");
  auto sum = value_of(text0, "herald_publish_to_write_seconds_sum");
  metrics::observe(histogram::publish_to_write, 50'000);        // le 5e-05 (inclusive)
  metrics::observe(histogram::publish_to_write, 700'000);       // le 0.001
  metrics::observe(histogram::publish_to_write, 9'000'000'000); // +Inf only
  metrics::observe(histogram::publish_to_write, -5);            // clamped to 0
  auto text = metrics::render();
  CHECK(value_of(text, R"(herald_publish_to_write_seconds_bucket{le="5e-05"})") == b0 + 2);
  CHECK(value_of(text, R"(herald_publish_to_write_seconds_bucket{le="0.001"})") == b1 + 3);
  CHECK(value_of(text, R"(herald_publish_to_write_seconds_bucket{le="+Inf"})") == inf + 4);
  CHECK(value_of(text, "herald_publish_to_write_seconds_count") == inf + 4);
  CHECK(value_of(text, "herald_publish_to_write_seconds_sum") ==
        Approx(sum + 9.00075).epsilon(1e-9));
}

TEST_CASE("the exposition is well formed: HELP and TYPE once per family, then its samples",
          "[metrics]") {
  metrics::set_redis_up(true);
  auto text = metrics::render();
  std::regex sample{
    R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-z_]+="[^"\\\n]*"(,[a-z_]+="[^"\\\n]*")*\})? -?[0-9.e+-]+$)"};
  std::regex type{R"(^# TYPE [a-z_]+ (counter|gauge|histogram)$)"};
  std::set<std::string> families;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    REQUIRE(end != std::string::npos); // every line ends with \n
    auto line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("# HELP ", 0) == 0) {
      auto name = line.substr(7, line.find(' ', 7) - 7);
      CHECK(families.insert(name).second);
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      CHECK(std::regex_match(line, type));
      continue;
    }
    INFO(line);
    CHECK(std::regex_match(line, sample));
  }
  for (auto f : {"herald_build_info", "herald_connections", "herald_channels",
                 "herald_publications_received_total", "herald_outbound_buffer_bytes",
                 "herald_recoveries_total", "herald_redis_up", "herald_redis_reconnects_total",
                 "herald_redis_command_duration_seconds", "herald_http_errors_total",
                 "process_resident_memory_bytes", "process_open_fds", "process_cpu_seconds_total"})
    CHECK(families.count(f) == 1);
  CHECK(value_of(text, "herald_redis_up") == 1);
  CHECK(value_of(text, "process_resident_memory_bytes") > 1'000'000);
  CHECK(value_of(text, "process_open_fds") >= 3);
  CHECK(text.find("herald_build_info{version=\"" + metrics::version() + "\"} 1\n") !=
        std::string::npos);
  CHECK(value_of(text, R"(herald_http_errors_total{code="invalid_channel"})") >= 0);
}

TEST_CASE("why Redis is not usable: a reason label from the reason text, one sample per reason",
          "[metrics]") {
  using metrics::redis_problem;
  // The texts redis::connection, subscriber and cluster_client give.
  const std::pair<const char*, redis_problem> texts[] = {
    {"connect: Connection refused", redis_problem::connection_refused},
    {"AUTH failed: WRONGPASS invalid username-password pair", redis_problem::auth},
    {"CLIENT SETNAME failed: NOAUTH Authentication required.", redis_problem::auth},
    {"subscriber: SUBSCRIBE of herald:{stream:a}:pub failed: NOPERM this user has no "
     "permissions to access one of the channels used as arguments",
     redis_problem::noperm},
    {"connect timeout after 3000 ms (TCP connect)", redis_problem::timeout},
    {"subscriber: heartbeat timeout: no PONG within 3000 ms", redis_problem::timeout},
    {"resolve redis.invalid: Host not found", redis_problem::resolve},
    {"the Redis Cluster slot map does not cover every slot", redis_problem::cluster},
    {"connection lost: Server closed the connection", redis_problem::other},
  };
  for (const auto& [text, problem] : texts) {
    CAPTURE(text);
    CHECK(metrics::classify_redis_problem(text) == problem);
  }
  metrics::set_redis_up(false);
  metrics::set_redis_problem(redis_problem::auth);
  auto text = metrics::render();
  CHECK(value_of(text, R"(herald_redis_down_reason{reason="auth"})") == 1);
  CHECK(value_of(text, R"(herald_redis_down_reason{reason="connection_refused"})") == 0);
  CHECK(value_of(text, R"(herald_redis_down_reason{reason="noperm"})") == 0);
  metrics::set_redis_problem(redis_problem::none);
  metrics::set_redis_up(true);
  text = metrics::render();
  CHECK(value_of(text, R"(herald_redis_down_reason{reason="auth"})") == 0);
  CHECK(text.find(R"(herald_redis_down_reason{reason="none"})") == std::string::npos);
}

TEST_CASE("Redis Cluster: one sample per node and family, redirections by kind, none without nodes",
          "[metrics]") {
  metrics::set_redis_up(true);
  CHECK(metrics::render().find("herald_redis_node_") == std::string::npos);
  auto moved = [] { return scrape(R"(herald_redis_redirects_total{kind="moved"})"); };
  metrics::set_redis_nodes({{"127.0.0.1:7000", true, 5461, 0, 2},
                            {"[::1]:7001", false, 10923, 0, 0},
                            {"10.0.0.9:7003", true, 0, 12, 1}});
  auto before = moved();
  metrics::redis_redirect(false);
  metrics::redis_redirect(true);
  auto text = metrics::render();
  CHECK(value_of(text, R"(herald_redis_node_connected{node="127.0.0.1:7000"})") == 1);
  CHECK(value_of(text, R"(herald_redis_node_connected{node="[::1]:7001"})") == 0);
  CHECK(value_of(text, R"(herald_redis_node_slots{node="[::1]:7001"})") == 10923);
  CHECK(value_of(text, R"(herald_redis_node_slots{node="10.0.0.9:7003"})") == 0);
  CHECK(value_of(text, R"(herald_redis_node_subscriptions{node="10.0.0.9:7003"})") == 12);
  CHECK(value_of(text, R"(herald_redis_node_reconnects_total{node="127.0.0.1:7000"})") == 2);
  CHECK(moved() == before + 1);
  CHECK(value_of(text, R"(herald_redis_redirects_total{kind="ask"})") >= 1);
  for (auto f :
       {"herald_redis_node_connected", "herald_redis_node_slots", "herald_redis_node_subscriptions",
        "herald_redis_node_reconnects_total", "herald_redis_redirects_total"}) {
    INFO(f);
    std::string family = f;
    CHECK(text.find("# TYPE " + family + " ") != std::string::npos);
    CHECK(text.find("# TYPE " + family + " ") == text.rfind("# TYPE " + family + " "));
  }
  CHECK(metrics::redis_nodes().size() == 3);
  metrics::set_redis_nodes({});
  CHECK(metrics::render().find("herald_redis_node_") == std::string::npos);
}

TEST_CASE("GET / answers JSON only to clients that ask for it", "[metrics][http]") {
  using herald::net::obs::wants_json;
  for (auto accept : {"application/json", "application/json, */*;q=0.5"})
    CHECK(wants_json(accept));
  for (auto accept : {"", "*/*", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
                      "text/html, application/json"}) {
    CAPTURE(accept);
    CHECK_FALSE(wants_json(accept));
  }
}

TEST_CASE("/v1/status reports the recorded figures", "[metrics][http]") {
  auto before = nlohmann::json::parse(herald::net::obs::status_json());
  metrics::connection_opened(metrics::transport::sse);
  metrics::publications_received(metrics::source::http, 3);
  metrics::channels(2);
  auto j = nlohmann::json::parse(herald::net::obs::status_json());
  CHECK(j["version"] == metrics::version());
  CHECK(j["mode"] == (j["redis"].is_null() ? "in-process" : "cluster"));
  CHECK(j["connections"]["sse"] == before["connections"]["sse"].get<int>() + 1);
  CHECK(j["connections"]["total"] == before["connections"]["total"].get<int>() + 1);
  CHECK(j["publications_received"]["http"] ==
        before["publications_received"]["http"].get<int>() + 3);
  CHECK(j["channels"] == before["channels"].get<int>() + 2);
  CHECK(j["uptime_seconds"].get<double>() >= before["uptime_seconds"].get<double>());
  metrics::connection_closed(metrics::transport::sse, close_reason::client);
  metrics::channels(-2);
}

TEST_CASE("/v1/status carries the publish-to-write histogram, cumulative", "[metrics][http]") {
  auto before = nlohmann::json::parse(herald::net::obs::status_json())["publish_to_write_seconds"];
  metrics::observe(metrics::histogram::publish_to_write, 3'000'000); // 3 ms: le 0.005
  auto h = nlohmann::json::parse(herald::net::obs::status_json())["publish_to_write_seconds"];
  REQUIRE(h["le"].size() == metrics::bucket_count + 1);
  REQUIRE(h["counts"].size() == metrics::bucket_count + 1);
  CHECK(h["le"][0] == 5e-05);
  CHECK(h["le"][metrics::bucket_count].is_null());
  for (std::size_t b = 0; b <= metrics::bucket_count; ++b) {
    INFO(b);
    auto added = h["counts"][b].get<std::uint64_t>() - before["counts"][b].get<std::uint64_t>();
    CHECK(added == (h["le"][b].is_null() || h["le"][b].get<double>() >= 0.005 ? 1u : 0u));
    if (b > 0)
      CHECK(h["counts"][b] >= h["counts"][b - 1]);
  }
}
