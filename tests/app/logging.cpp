// Log lines (app/logging.hpp): JSON lines parse and escape, text lines carry
// fields, and the client log limiter bounds lines per kind and second.
#include "app/logging.hpp"

#include <catch2/catch.hpp>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

using namespace herald::app;

namespace {

// Routes the default logger into a string for one test.
struct captured_log {
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  explicit captured_log(bool json) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink));
    setup_logging("info", json);
  }
  ~captured_log() { spdlog::set_default_logger(previous); }
  std::vector<std::string> lines() const {
    std::vector<std::string> result;
    std::istringstream in{out.str()};
    for (std::string l; std::getline(in, l);)
      result.push_back(l);
    return result;
  }
};

} // namespace

TEST_CASE("json lines: one object per line, escaped, with fields") {
  captured_log log{true};
  spdlog::info("quote \" newline \n tab \t end");
  log_with(spdlog::level::warn, "with fields", {{"conn", 7}, {"reason", "x\"y"}});
  spdlog::debug("below the level");
  auto lines = log.lines();
  REQUIRE(lines.size() == 2);
  auto a = nlohmann::json::parse(lines[0]);
  CHECK(a["level"] == "info");
  CHECK(a["msg"] == "quote \" newline \n tab \t end");
  CHECK(a["time"].get<std::string>().size() == 24); // 2026-01-01T12:00:00.123Z
  CHECK(a["time"].get<std::string>().back() == 'Z');
  auto b = nlohmann::json::parse(lines[1]);
  CHECK(b["level"] == "warn");
  CHECK(b["conn"] == 7);
  CHECK(b["reason"] == "x\"y");
}

TEST_CASE("text lines: time, level, message, key=value fields") {
  captured_log log{false};
  log_with(spdlog::level::info, "hello", {{"conn", 3}});
  auto lines = log.lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find(" info hello conn=3") != std::string::npos);
}

TEST_CASE("client log limiter: N per kind per second, then one suppressed line") {
  captured_log log{true};
  client_log_limiter limiter{3};
  auto t0 = client_log_limiter::clock::now();
  int written = 0;
  for (int i = 0; i < 100; ++i)
    written += limiter.log("bad_request", spdlog::level::info, "refused", {{"i", i}}, t0);
  CHECK(written == 3);
  // Another kind has its own budget.
  CHECK(limiter.log("protocol_error", spdlog::level::info, "closed", {}, t0));
  // The next window starts with the count of what the last one dropped.
  CHECK(
    limiter.log("bad_request", spdlog::level::info, "refused", {}, t0 + std::chrono::seconds(1)));
  auto lines = log.lines();
  REQUIRE(lines.size() == 6);
  auto suppressed = nlohmann::json::parse(lines[4]);
  CHECK(suppressed["suppressed"] == 97);
  CHECK(suppressed["kind"] == "bad_request");
  CHECK(nlohmann::json::parse(lines[5])["kind"] == "bad_request");
  // flush() reports drops nobody reported yet, once.
  for (int i = 0; i < 10; ++i)
    limiter.log("protocol_error", spdlog::level::info, "closed", {}, t0);
  CHECK(limiter.flush() == 1);
  CHECK(limiter.flush() == 0);
  CHECK(nlohmann::json::parse(log.lines().back())["suppressed"] == 8);
}
