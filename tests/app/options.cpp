// Configuration sources (app/options.hpp): precedence CLI > env > file >
// defaults, HERALD_* names derived from the option set, bad values from each
// source named with their source, dump-config (round trip, redaction), help,
// version.
#include "app/options.hpp"

#include <catch2/catch.hpp>
#include <caf/config_option_adder.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace herald::app;

namespace {

// A config with an option added the way others add theirs (a secret).
struct test_config : config {
  std::string jwt_secret;
  std::string api_key;
  test_config() {
    opt_group{custom_options_, "global"}
      .add(jwt_secret, "jwt-secret", "HMAC key for tokens")
      .add(api_key, "api-key", "publisher key");
  }
};

// A temporary INI file, removed at scope exit.
struct temp_file {
  std::string path;
  explicit temp_file(const std::string& text) {
    char name[] = "/tmp/herald-options-XXXXXX";
    int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    path = name;
    std::ofstream{path} << text;
  }
  ~temp_file() { std::remove(path.c_str()); }
};

struct run {
  startup result;
  std::string out, err;
  std::map<std::string, option_source> sources;
};

run load(config& cfg, std::vector<std::string> args, environment env = {}) {
  std::ostringstream out, err;
  run r;
  r.result = load_config(cfg, args, env, out, err, &r.sources);
  r.out = out.str();
  r.err = err.str();
  return r;
}

} // namespace

TEST_CASE("env names are HERALD_ plus the option name upper-cased") {
  CHECK(env_name("client-max-buffer") == "HERALD_CLIENT_MAX_BUFFER");
  CHECK(env_name("scheduler.max-threads") == "HERALD_SCHEDULER_MAX_THREADS");
  CHECK(env_name("jwt-secret") == "HERALD_JWT_SECRET");
}

TEST_CASE("every listed option has an env name; CAF's meta and unused options are not listed") {
  test_config cfg;
  std::set<std::string> names;
  for (const auto& opt : cfg.option_set())
    if (is_herald_option(opt))
      names.insert(option_name(opt));
  CHECK(names.count("port"));
  CHECK(names.count("scheduler.max-threads"));
  CHECK(names.count("work-stealing.moderate-poll-attempts"));
  CHECK(names.count("jwt-secret")); // added later: covered without changes
  CHECK_FALSE(names.count("config-file"));
  CHECK_FALSE(names.count("dump-config"));
  CHECK_FALSE(names.count("logger.verbosity"));
  CHECK_FALSE(names.count("middleman.workers"));
  auto help = help_text(cfg);
  for (const auto& n : names) {
    INFO(n);
    CHECK(help.find("--" + n) != std::string::npos);
    CHECK(help.find(env_name(n)) != std::string::npos);
  }
  CHECK(help.find("default 8080; env HERALD_PORT or PORT") != std::string::npos);
}

TEST_CASE("precedence: command line > environment > file > default") {
  temp_file ini{"[global]\nport=1111\nhistory-size=5\nhost=\"10.0.0.1\"\nio-threads=3\n"
                "[scheduler]\nmax-threads=3\n"};
  config cfg;
  auto r = load(cfg, {"--config-file=" + ini.path, "--port=3333"},
                {{"HERALD_PORT", "2222"}, {"HERALD_HISTORY_SIZE", "6"}, {"PORT", "9"},
                 {"HERALD_SCHEDULER_MAX_THREADS", "1"}});
  INFO(r.err);
  REQUIRE(r.result == startup::run);
  CHECK(cfg.port == 3333);                 // CLI over env and file
  CHECK(cfg.history_size == 6);            // env over file
  CHECK(cfg.host == "10.0.0.1");           // file over default
  CHECK(cfg.io_threads == 3);
  CHECK(cfg.history_ttl == 300);           // default
  CHECK(caf::get_or(cfg, "scheduler.max-threads", size_t{0}) == 1); // CAF option from env
  CHECK(r.sources["port"] == option_source::cli);
  CHECK(r.sources["history-size"] == option_source::env);
  CHECK(r.sources["host"] == option_source::file);
  CHECK(r.sources["scheduler.max-threads"] == option_source::env);
  CHECK_FALSE(r.sources.count("history-ttl"));
}

TEST_CASE("PORT and REDIS_URL are aliases below the HERALD_ names") {
  {
    config cfg;
    auto r = load(cfg, {}, {{"PORT", "4444"}, {"REDIS_URL", "redis://127.0.0.1:7"}});
    REQUIRE(r.result == startup::run);
    CHECK(cfg.port == 4444);
    CHECK(cfg.redis_url == "redis://127.0.0.1:7");
  }
  {
    config cfg;
    auto r = load(cfg, {}, {{"PORT", "4444"}, {"HERALD_PORT", "5555"},
                            {"REDIS_URL", "redis://a:1"}, {"HERALD_REDIS_URL", "redis://b:2"}});
    REQUIRE(r.result == startup::run);
    CHECK(cfg.port == 5555);
    CHECK(cfg.redis_url == "redis://b:2");
  }
  {
    config cfg; // an empty PORT is "unset" (scripts export PORT="")
    auto r = load(cfg, {}, {{"PORT", ""}});
    REQUIRE(r.result == startup::run);
    CHECK(cfg.port == 8080);
  }
}

TEST_CASE("options added later (secrets) come from the environment too") {
  test_config cfg;
  auto r = load(cfg, {}, {{"HERALD_JWT_SECRET", "s3cr3t-value"}, {"HERALD_API_KEY", "k-123"}});
  REQUIRE(r.result == startup::run);
  CHECK(cfg.jwt_secret == "s3cr3t-value");
  CHECK(cfg.api_key == "k-123");
}

TEST_CASE("bad values stop start-up naming the option and the source") {
  SECTION("command line: unparsable") {
    config cfg;
    auto r = load(cfg, {"--port=abc"});
    CHECK(r.result == startup::exit_failure);
    CHECK(r.err.find("--port") != std::string::npos);
    CHECK(r.err.find("command line") != std::string::npos);
  }
  SECTION("command line: out of range") {
    config cfg;
    auto r = load(cfg, {"--port=70000"});
    CHECK(r.result == startup::exit_failure);
    CHECK(r.err.find("--port") != std::string::npos);
  }
  SECTION("command line: unknown option") {
    config cfg;
    auto r = load(cfg, {"--no-such-option=1"});
    CHECK(r.result == startup::exit_failure);
    CHECK(r.err.find("unknown option --no-such-option (command line)") != std::string::npos);
  }
  SECTION("command line: stray argument") {
    config cfg;
    auto r = load(cfg, {"--port=1", "extra"});
    CHECK(r.result == startup::exit_failure);
    CHECK(r.err.find("unexpected argument 'extra'") != std::string::npos);
  }
  SECTION("environment") {
    config cfg;
    auto r = load(cfg, {}, {{"HERALD_CLIENT_MAX_BUFFER", "-5"}});
    CHECK(r.result == startup::exit_failure);
    CHECK(r.err.find("--client-max-buffer (environment variable HERALD_CLIENT_MAX_BUFFER)")
          != std::string::npos);
  }
  SECTION("environment alias") {
    config cfg;
    auto r = load(cfg, {}, {{"PORT", "http"}});
    CHECK(r.result == startup::exit_failure);
    CHECK(r.err.find("environment variable PORT") != std::string::npos);
  }
  SECTION("environment: a secret's value is never echoed") {
    struct num_secret_config : config {
      std::size_t token_ttl = 1;
      num_secret_config() { opt_group{custom_options_, "global"}.add(token_ttl, "token-ttl", "s"); }
    } cfg;
    auto r = load(cfg, {}, {{"HERALD_TOKEN_TTL", "not-a-number-SECRET"}});
    CHECK(r.result == startup::exit_failure);
    CHECK(r.err.find("HERALD_TOKEN_TTL") != std::string::npos);
    CHECK(r.err.find("SECRET") == std::string::npos);
  }
  SECTION("file: wrong type, with section") {
    temp_file ini{"[global]\nport=70000\n"};
    config cfg;
    auto r = load(cfg, {"--config-file=" + ini.path});
    CHECK(r.result == startup::exit_failure);
    CHECK(r.err.find("port") != std::string::npos);
    CHECK(r.err.find("config file " + ini.path) != std::string::npos);
  }
  SECTION("file: unknown option") {
    temp_file ini{"[scheduler]\nmax-treads=2\n"};
    config cfg;
    auto r = load(cfg, {"--config-file=" + ini.path});
    CHECK(r.result == startup::exit_failure);
    CHECK(r.err.find("unknown option scheduler.max-treads") != std::string::npos);
  }
  SECTION("file: syntax error has line and column") {
    temp_file ini{"[global]\nhost=unquoted\n"};
    config cfg;
    auto r = load(cfg, {"--config-file=" + ini.path});
    CHECK(r.result == startup::exit_failure);
    CHECK(r.err.find("config file " + ini.path) != std::string::npos);
    CHECK(r.err.find("line") != std::string::npos);
  }
  SECTION("file: missing explicit file") {
    config cfg;
    auto r = load(cfg, {"--config-file=/nonexistent/herald.ini"});
    CHECK(r.result == startup::exit_failure);
    CHECK(r.err.find("cannot open config file '/nonexistent/herald.ini'") != std::string::npos);
  }
  SECTION("file from HERALD_CONFIG_FILE") {
    temp_file ini{"[global]\nhistory-size=0\n"};
    config cfg;
    auto r = load(cfg, {}, {{"HERALD_CONFIG_FILE", ini.path}});
    CHECK(r.result == startup::exit_failure); // validate(): must be greater than 0
    CHECK(r.err.find("--history-size must be greater than 0 (from config file " + ini.path + ")")
          != std::string::npos);
  }
  SECTION("validate() failures name the source of the value") {
    config cfg;
    auto r = load(cfg, {}, {{"HERALD_LOG_FORMAT", "xml"}});
    CHECK(r.result == startup::exit_failure);
    CHECK(r.err.find("--log-format must be text or json (from environment variable "
                     "HERALD_LOG_FORMAT)")
          != std::string::npos);
  }
  SECTION("every bad source is reported in one run") {
    config cfg;
    auto r = load(cfg, {"--port=x"}, {{"HERALD_IO_THREADS", "y"}});
    CHECK(r.err.find("--port") != std::string::npos);
    CHECK(r.err.find("HERALD_IO_THREADS") != std::string::npos);
  }
}

TEST_CASE("dump-config prints the effective configuration, readable back, secrets redacted") {
  test_config cfg;
  auto r = load(cfg, {"--dump-config", "--history-size=7", "--scheduler.max-throughput=50"},
                {{"HERALD_JWT_SECRET", "hunter2-jwt"},
                 {"HERALD_API_KEY", "apikey-value"},
                 {"HERALD_REDIS_URL", "redis://:redispass@127.0.0.1:6379/0"}});
  INFO(r.err);
  REQUIRE(r.result == startup::exit_success);
  const auto& dump = r.out;
  CHECK(dump.find("[global]") != std::string::npos);
  CHECK(dump.find("history-size=7\n") != std::string::npos);
  CHECK(dump.find("[scheduler]") != std::string::npos);
  CHECK(dump.find("max-throughput=50\n") != std::string::npos);
  CHECK(dump.find("policy='sharing'\n") != std::string::npos);
  CHECK(dump.find("; jwt-secret=<redacted>") != std::string::npos);
  CHECK(dump.find("; api-key=<redacted>") != std::string::npos);
  CHECK(dump.find("hunter2-jwt") == std::string::npos);
  CHECK(dump.find("apikey-value") == std::string::npos);
  CHECK(dump.find("redispass") == std::string::npos);
  CHECK(dump.find("redis-url=\"redis://:***@127.0.0.1:6379/0\"") != std::string::npos);

  // Read back as a config file: the same configuration (secrets aside).
  test_config plain;
  auto first = load(plain, {"--dump-config", "--history-size=7", "--host=1.2.3.4"});
  REQUIRE(first.result == startup::exit_success);
  temp_file ini{first.out};
  test_config again;
  auto second = load(again, {"--dump-config", "--config-file=" + ini.path});
  INFO(second.err);
  REQUIRE(second.result == startup::exit_success);
  CHECK(second.out == first.out);
}

TEST_CASE("version and help only print") {
  config cfg;
  auto v = load(cfg, {"version"});
  CHECK(v.result == startup::exit_success);
  CHECK(v.out == build_info() + "\n");
  CHECK(v.out.rfind("herald 0.", 0) == 0);
  CHECK(v.out.find("commit ") != std::string::npos);
  CHECK(v.out.find("CAF 0.17.") != std::string::npos);
  CHECK(v.out.find("Boost 1.") != std::string::npos);
  CHECK(load(cfg, {"--version"}).out == v.out);
  auto h = load(cfg, {"--port=1", "--help"});
  CHECK(h.result == startup::exit_success);
  CHECK(h.out.find("HERALD_SCHEDULER_MAX_THREADS") != std::string::npos);
}

TEST_CASE("URL passwords and secret names") {
  CHECK(redact_url("redis://:pw@host:1/2") == "redis://:***@host:1/2");
  CHECK(redact_url("redis://user:pw@host:1") == "redis://user:***@host:1");
  CHECK(redact_url("redis://host:1") == "redis://host:1");
  CHECK(redact_url("plain") == "plain");
  CHECK(is_secret("jwt-secret"));
  CHECK(is_secret("api-key"));
  CHECK(is_secret("admin-token"));
  CHECK(is_secret("redis-password"));
  CHECK_FALSE(is_secret("port"));
}
