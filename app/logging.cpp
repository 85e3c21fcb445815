#include "app/logging.hpp"

#include "net/wire/enum_names.hpp"

#include <spdlog/formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <ctime>
#include <memory>

namespace herald::app {

namespace {

// Fields of the line being logged on this thread (log_with). spdlog's
// default logger is synchronous: format() runs inside the log call, on the
// caller's thread.
thread_local const nlohmann::json* current_fields = nullptr;

std::string utc_time(spdlog::log_clock::time_point tp) {
  using namespace std::chrono;
  auto secs = time_point_cast<seconds>(tp);
  auto ms = duration_cast<milliseconds>(tp - secs).count();
  std::time_t t = system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  auto n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms));
  return buf;
}

std::string_view level_name(spdlog::level::level_enum l) {
  return net::enum_name<spdlog::level::trace, spdlog::level::off>(
    l, {"trace", "debug", "info", "warn", "error", "critical", "off"}, "off");
}

class line_formatter final : public spdlog::formatter {
public:
  explicit line_formatter(bool json)
    : json_(json) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::string line;
    std::string_view text{msg.payload.data(), msg.payload.size()};
    if (json_) {
      // time, level, msg first: ordered_json keeps insertion order.
      nlohmann::ordered_json j = nlohmann::ordered_json::object();
      j["time"] = utc_time(msg.time);
      j["level"] = level_name(msg.level);
      j["msg"] = text;
      j["thread"] = msg.thread_id;
      if (current_fields != nullptr && current_fields->is_object())
        for (const auto& [k, v] : current_fields->items())
          if (!j.contains(k))
            j[k] = v;
      // Invalid UTF-8 from anywhere must not make the line unparsable.
      line = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    } else {
      line = utc_time(msg.time);
      line += ' ';
      line += level_name(msg.level);
      line += ' ';
      line += text;
      if (current_fields != nullptr && current_fields->is_object())
        for (const auto& [k, v] : current_fields->items()) {
          line += ' ';
          line += k;
          line += '=';
          line += v.is_string() ? v.get<std::string>()
                                : v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        }
    }
    line += '\n';
    dest.append(line.data(), line.data() + line.size());
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<line_formatter>(json_);
  }

private:
  bool json_;
};

std::mutex client_log_mtx;
std::unique_ptr<client_log_limiter> client_log_instance;

} // namespace

void setup_logging(std::string_view level, bool json) {
  spdlog::set_level(spdlog::level::from_str(std::string{level}));
  spdlog::set_formatter(std::make_unique<line_formatter>(json));
  // Shutdown and start-up lines must reach a pipe at once.
  spdlog::flush_on(spdlog::level::trace);
}

void log_with(spdlog::level::level_enum level, std::string_view msg, nlohmann::json fields) {
  current_fields = &fields;
  spdlog::log(level, "{}", msg);
  current_fields = nullptr;
}

client_log_limiter::client_log_limiter(std::size_t per_second)
  : per_second_(per_second == 0 ? 1 : per_second) {}

void client_log_limiter::report(const std::string& kind, std::uint64_t suppressed) {
  log_with(spdlog::level::warn,
           "suppressed " + std::to_string(suppressed) + " log line(s) of kind " + kind,
           {{"kind", kind}, {"suppressed", suppressed}});
}

bool client_log_limiter::log(std::string_view kind, spdlog::level::level_enum level,
                             std::string_view msg, nlohmann::json fields, clock::time_point now) {
  std::uint64_t dropped = 0;
  std::string key{kind};
  {
    std::lock_guard<std::mutex> guard{mtx_};
    auto& w = windows_[key];
    if (now - w.start >= std::chrono::seconds(1)) {
      dropped = w.suppressed;
      w = window{now, 0, 0};
    }
    if (w.written >= per_second_) {
      ++w.suppressed;
      return false;
    }
    ++w.written;
  }
  if (dropped > 0)
    report(key, dropped);
  if (fields.is_null())
    fields = nlohmann::json::object();
  if (fields.is_object())
    fields["kind"] = key;
  log_with(level, msg, std::move(fields));
  return true;
}

std::size_t client_log_limiter::flush() {
  std::vector<std::pair<std::string, std::uint64_t>> dropped;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    for (auto& [kind, w] : windows_)
      if (w.suppressed > 0) {
        dropped.emplace_back(kind, w.suppressed);
        w.suppressed = 0;
      }
  }
  for (auto& [kind, n] : dropped)
    report(kind, n);
  return dropped.size();
}

client_log_limiter& client_log() {
  std::lock_guard<std::mutex> guard{client_log_mtx};
  if (!client_log_instance)
    client_log_instance = std::make_unique<client_log_limiter>(10);
  return *client_log_instance;
}

void setup_client_log(std::size_t per_second) {
  std::lock_guard<std::mutex> guard{client_log_mtx};
  client_log_instance = std::make_unique<client_log_limiter>(per_second);
}

} // namespace herald::app
