// Configuration sources (app/options.hpp): precedence CLI > env > file >
// defaults, HERALD_* names derived from the option set, bad values from each
// source named with their source, dump-config (round trip, redaction), help,
// version.
#include "app/options.hpp"

#include "actors/channel_actor.hpp"
#include "actors/connection_actor.hpp"
#include "net/redis/client.hpp"
#include "net/redis/cluster_client.hpp"
#include "net/redis/script_reply.hpp"
#include "net/core/session_options.hpp"

#include <catch2/catch.hpp>
#include <caf/config_option_adder.hpp>

#include <cctype>
#include <cstdio>
#include <regex>
#include <set>
#include <fstream>
#include <optional>
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
    secret_options = {"jwt-secret", "api-key"};
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

// A --dump-config output read back as a config file into `cfg` (a fresh
// config) dumps the same text again. A macro so that a failure names the
// test's line.
#define CHECK_DUMP_READS_BACK(dump, cfg)                                                          \
  do {                                                                                           \
    temp_file ini_{dump};                                                                        \
    auto again_ = load(cfg, {"--dump-config", "--config-file=" + ini_.path});                    \
    INFO(again_.err);                                                                            \
    REQUIRE(again_.result == startup::exit_success);                                             \
    CHECK(again_.out == (dump));                                                                 \
  } while (false)

} // namespace

TEST_CASE("env names are HERALD_ plus the option name upper-cased") {
  CHECK(env_name("client-max-buffer") == "HERALD_CLIENT_MAX_BUFFER");
  CHECK(env_name("scheduler.max-threads") == "HERALD_SCHEDULER_MAX_THREADS");
  CHECK(env_name("jwt-secret") == "HERALD_JWT_SECRET");
}

TEST_CASE("every listed option has an env name, CAF's meta and unused options are not listed") {
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
                {{"HERALD_PORT", "2222"},
                 {"HERALD_HISTORY_SIZE", "6"},
                 {"PORT", "9"},
                 {"HERALD_SCHEDULER_MAX_THREADS", "1"},
                 {"HERALD_INSECURE", "true"}});
  INFO(r.err);
  REQUIRE(r.result == startup::run);
  CHECK(cfg.port == 3333);       // CLI over env and file
  CHECK(cfg.history_size == 6);  // env over file
  CHECK(cfg.host == "10.0.0.1"); // file over default
  CHECK(cfg.io_threads == 3);
  CHECK(cfg.history_ttl == 300);                                    // default
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
    auto r =
      load(cfg, {},
           {{"PORT", "4444"}, {"REDIS_URL", "redis://127.0.0.1:7"}, {"HERALD_INSECURE", "true"}});
    REQUIRE(r.result == startup::run);
    CHECK(cfg.port == 4444);
    CHECK(cfg.redis_url == "redis://127.0.0.1:7");
  }
  {
    config cfg;
    auto r = load(cfg, {},
                  {{"PORT", "4444"},
                   {"HERALD_PORT", "5555"},
                   {"REDIS_URL", "redis://a:1"},
                   {"HERALD_REDIS_URL", "redis://b:2"},
                   {"HERALD_INSECURE", "true"}});
    REQUIRE(r.result == startup::run);
    CHECK(cfg.port == 5555);
    CHECK(cfg.redis_url == "redis://b:2");
  }
  {
    config cfg; // an empty PORT is "unset" (scripts export PORT="")
    auto r = load(cfg, {}, {{"PORT", ""}, {"HERALD_INSECURE", "true"}});
    REQUIRE(r.result == startup::run);
    CHECK(cfg.port == 8080);
  }
}

TEST_CASE("options added later (secrets) come from the environment too") {
  test_config cfg;
  auto r = load(cfg, {},
                {{"HERALD_JWT_SECRET", "s3cr3t-value-s3cr3t-value-s3cr3t-value"},
                 {"HERALD_API_KEY", "k-123-k-123-k-123-k-123"}});
  INFO(r.err);
  REQUIRE(r.result == startup::run);
  CHECK(cfg.jwt_secret == "s3cr3t-value-s3cr3t-value-s3cr3t-value");
  CHECK(cfg.api_key == "k-123-k-123-k-123-k-123");
}

// One bad value each, from each source: start-up fails and the error names
// the option (or what is wrong) and where the value came from.
TEST_CASE("bad values stop start-up naming the option and the source") {
  struct bad_value {
    const char* what;
    std::vector<std::string> args;
    environment env;
    std::string ini; ///< a config file's text ("": none); {file} in `says` is its path
    std::vector<std::string> says;
  };
  const bad_value cases[] = {
    {"command line: unparsable", {"--port=abc"}, {}, "", {"--port", "command line"}},
    {"command line: out of range", {"--port=70000"}, {}, "", {"--port"}},
    {"command line: stray argument",
     {"--port=1", "extra"},
     {},
     "",
     {"unexpected argument 'extra'"}},
    {"environment",
     {},
     {{"HERALD_CLIENT_MAX_BUFFER", "-5"}},
     "",
     {"--client-max-buffer (environment variable HERALD_CLIENT_MAX_BUFFER)"}},
    {"environment alias", {}, {{"PORT", "http"}}, "", {"environment variable PORT"}},
    {"file: missing explicit file",
     {"--config-file=/nonexistent/herald.ini"},
     {},
     "",
     {"cannot open config file '/nonexistent/herald.ini'"}},
    {"validate() failures name the source of the value",
     {},
     {{"HERALD_LOG_FORMAT", "xml"}},
     "",
     {"--log-format must be text or json (from environment variable HERALD_LOG_FORMAT)"}},
    {"file: wrong type, with section",
     {},
     {},
     "[global]\nport=70000\n",
     {"port", "config file {file}"}},
    {"file: unknown option",
     {},
     {},
     "[scheduler]\nmax-treads=2\n",
     {"unknown option scheduler.max-treads in section [scheduler] (config file {file}, line 2)"}},
    {"file: a string without quotes, with its line",
     {},
     {},
     "[global]\nhost=unquoted\n",
     {"herald: bad value 'unquoted' for host: expected string in double quotes, e.g. "
      "host=\"...\" (config file {file}, line 2)"}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    std::optional<temp_file> ini;
    auto args = c.args;
    if (!c.ini.empty()) {
      ini.emplace(c.ini);
      args.push_back("--config-file=" + ini->path);
    }
    config cfg;
    auto r = load(cfg, args, c.env);
    CHECK(r.result == startup::exit_failure);
    for (auto says : c.says) {
      if (auto at = says.find("{file}"); at != std::string::npos)
        says.replace(at, 6, ini->path);
      CHECK(r.err.find(says) != std::string::npos);
    }
  }
}

TEST_CASE("bad values from several places or with a history stop start-up, each named") {
  SECTION("command line: unknown option") {
    config cfg;
    auto r = load(cfg, {"--no-such-option=1"});
    CHECK(r.result == startup::exit_failure);
    CHECK(r.err.find("unknown option --no-such-option (command line)") != std::string::npos);
    CHECK(r.err.find("did you mean") == std::string::npos); // nothing near
  }
  SECTION("unknown option: the near one is suggested") {
    // Was: "unknown option --jwt-secret (command line)" and nothing more,
    // while the README named HERALD_JWT_SECRET as a derived option name.
    config cfg;
    auto r = load(cfg, {"--jwt-secret=0123456789abcdef0123456789abcdef", "--histroy-size=5"});
    CHECK(r.result == startup::exit_failure);
    CHECK(r.err.find("unknown option --jwt-secret (command line); did you mean "
                     "--jwt-secret-file (file holding the HS256 secret") != std::string::npos);
    CHECK(r.err.find("HERALD_JWT_SECRET)") != std::string::npos);
    CHECK(r.err.find("unknown option --histroy-size (command line); did you mean --history-size") !=
          std::string::npos);
    CHECK(r.err.find("0123456789abcdef") == std::string::npos); // the value is never shown
    config api;
    auto k = load(api, {"--api-key=x"});
    CHECK(k.err.find("did you mean --api-key-file (") != std::string::npos);
    temp_file ini{"[scheduler]\nmax-treads=2\n[global]\nports=1\n"};
    config file;
    auto f = load(file, {"--config-file=" + ini.path});
    CHECK(f.err.find("unknown option scheduler.max-treads in section [scheduler] (config file " +
                     ini.path + ", line 2); did you mean scheduler.max-threads") !=
          std::string::npos);
    CHECK(f.err.find("line 4); did you mean port (") != std::string::npos);
  }
  SECTION("environment: a secret's value is never echoed") {
    struct num_secret_config : config {
      std::size_t token_ttl = 1;
      num_secret_config() {
        opt_group{custom_options_, "global"}.add(token_ttl, "token-ttl", "s");
        secret_options.insert("token-ttl");
      }
    } cfg;
    auto r = load(cfg, {"--insecure"}, {{"HERALD_TOKEN_TTL", "not-a-number-SECRET"}});
    CHECK(r.result == startup::exit_failure);
    CHECK(r.err.find("HERALD_TOKEN_TTL") != std::string::npos);
    CHECK(r.err.find("SECRET") == std::string::npos);
  }
  SECTION("file: an empty value is reported on its own line, in plain words") {
    // Was: "parser_error(unexpected_newline, ...line 3)" for line 2.
    temp_file ini{"[global]\nport=\nhistory-size=5\n"};
    config cfg;
    auto r = load(cfg, {"--config-file=" + ini.path});
    CHECK(r.result == startup::exit_failure);
    CHECK(r.err.find("herald: port has no value; write port=<uint16> (config file " + ini.path +
                     ", line 2)") != std::string::npos);
    CHECK(r.err.find("parser_error") == std::string::npos);
    CHECK(r.err.find("line 3") == std::string::npos);
  }
  SECTION("file: every bad line at once, with file and line") {
    temp_file ini{"; comment\n[global]\nport=\nhost=\"a\nbogus=1\nnot a setting\n"
                  "history-size=0\n[scheduler]\nmax-treads=2\npolicy=sharing\n"};
    config cfg;
    auto r = load(cfg, {"--config-file=" + ini.path});
    CHECK(r.result == startup::exit_failure);
    auto at = [&](int line) {
      return "(config file " + ini.path + ", line " + std::to_string(line) + ")";
    };
    CHECK(r.err.find("port has no value; write port=<uint16> " + at(3)) != std::string::npos);
    CHECK(r.err.find("a value opens a double quote and does not close it " + at(4)) !=
          std::string::npos);
    CHECK(r.err.find("unknown option bogus " + at(5)) != std::string::npos);
    CHECK(r.err.find("expected name=value or [section], found 'not a setting' " + at(6)) !=
          std::string::npos);
    CHECK(r.err.find("--history-size must be greater than 0 (from " + at(7).substr(1)) !=
          std::string::npos);
    CHECK(r.err.find("unknown option scheduler.max-treads in section [scheduler] " + at(9)) !=
          std::string::npos);
    CHECK(r.err.find("bad value 'sharing' for scheduler.policy: expected atom in single quotes, "
                     "e.g. policy='...' " +
                     at(10)) != std::string::npos);
  }
  SECTION("file from HERALD_CONFIG_FILE") {
    temp_file ini{"[global]\nhistory-size=0\n"};
    config cfg;
    auto r = load(cfg, {}, {{"HERALD_CONFIG_FILE", ini.path}});
    CHECK(r.result == startup::exit_failure); // validate(): must be greater than 0
    CHECK(r.err.find("--history-size must be greater than 0 (from config file " + ini.path +
                     ", line 2)") != std::string::npos);
  }
  SECTION("every bad source is reported in one run") {
    config cfg;
    auto r = load(cfg, {"--port=x"}, {{"HERALD_IO_THREADS", "y"}});
    CHECK(r.err.find("--port") != std::string::npos);
    CHECK(r.err.find("HERALD_IO_THREADS") != std::string::npos);
  }
  SECTION("a parse error and value errors are reported together") {
    // Was: only "unknown option --bogus".
    config cfg;
    auto r = load(cfg, {"--history-size=0", "--bogus=1", "--log-format=xml"},
                  {{"HERALD_SHUTDOWN_TIMEOUT", "0"}});
    CHECK(r.result == startup::exit_failure);
    CHECK(r.err.find("unknown option --bogus (command line)") != std::string::npos);
    CHECK(r.err.find("--history-size must be greater than 0 (from command line)") !=
          std::string::npos);
    CHECK(r.err.find("--log-format must be text or json (from command line)") != std::string::npos);
    CHECK(r.err.find("--shutdown-timeout must be 1-3600 seconds (from environment variable "
                     "HERALD_SHUTDOWN_TIMEOUT)") != std::string::npos);
  }
}

TEST_CASE("a Redis prefix with braces is refused: they would change every key's hash tag") {
  // Keys are <prefix>{<channel>}:meta ...; a brace in the prefix would make
  // Redis Cluster hash another part of the name (docs/cluster.md).
  for (const char* bad : {"--redis-prefix=a{b}:", "--redis-prefix={x", "--redis-prefix=x}"}) {
    config cfg;
    auto r = load(cfg, {bad});
    CHECK(r.result == startup::exit_failure);
    CHECK(r.err.find("--redis-prefix must be 1-64 characters without spaces, glob characters or "
                     "braces") != std::string::npos);
  }
  config cfg;
  CHECK(load(cfg, {"--redis-prefix=prod:", "--insecure"}).result != startup::exit_failure);
}

TEST_CASE("a bad channel class stops start-up naming the class and what is wrong") {
  const std::pair<const char*, const char*> cases[] = {
    {"--channel-classes=stream:* colour=red", "unknown class option \"colour\""},
    {"--channel-classes=stream:* recovery=fast", "recovery must be stream or cache"},
    {"--channel-classes=stream:* overflow=drop", "overflow must be close or conflate"},
    {"--channel-classes=stream:* history-size=x", "history-size must be"},
    {"--channel-classes=chat:* recovery=cache", "class pattern \"chat:*\""},
    // issue 39: was accepted, the last value winning.
    {"--channel-classes=stream:* recovery=cache recovery=stream",
     "class stream:*: key \"recovery\" is given twice (recovery=cache, recovery=stream)"},
  };
  for (const auto& [arg, why] : cases) {
    config cfg;
    auto r = load(cfg, {arg, "--insecure"});
    CHECK(r.result == startup::exit_failure);
    INFO(r.err);
    CHECK(r.err.find("--channel-classes: ") != std::string::npos);
    CHECK(r.err.find(why) != std::string::npos);
  }
  config cfg;
  CHECK(load(cfg, {"--channel-classes=stream:* recovery=cache overflow=conflate", "--insecure"})
          .result != startup::exit_failure);
  CHECK(cfg.classes()->of("stream:1").recovery == herald::net::recovery_mode::cache);
  config env_cfg;
  CHECK(load(env_cfg, {"--insecure"}, {{"HERALD_CHANNEL_CLASSES", "user:* history-size=3"}})
          .result != startup::exit_failure);
  CHECK(env_cfg.classes()->listed().at(0).history_size == 3u);
}

TEST_CASE("dump-config prints the effective configuration, readable back, secrets redacted") {
  test_config cfg;
  auto r = load(cfg, {"--dump-config", "--history-size=7", "--scheduler.max-throughput=50"},
                {{"HERALD_JWT_SECRET", "hunter2-jwt-hunter2-jwt-hunter2-jwt"},
                 {"HERALD_API_KEY", "apikey-value-0123"},
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
  test_config again;
  CHECK_DUMP_READS_BACK(first.out, again);
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
}

TEST_CASE("secret options are named, not guessed from their names") {
  test_config cfg;
  for (const char* name : {"jwt-secret", "api-key"})
    CHECK(is_secret(cfg, name));
  // Numbers and file names whose names contain token/key/secret are not secrets.
  for (const char* name :
       {"port", "token-refresh-grace", "jwt-secret-file", "api-key-file", "jwt-public-key"}) {
    CAPTURE(name);
    CHECK_FALSE(is_secret(cfg, name));
  }
  CHECK(config{}.secret_options.empty());
  cfg.jwt_secret = "hunter2-jwt";
  auto help = help_text(cfg);
  CHECK(help.find("default <redacted>; env HERALD_JWT_SECRET\n") != std::string::npos);
  CHECK(help.find("hunter2") == std::string::npos);
  CHECK(help.find("default 25; env HERALD_TOKEN_REFRESH_GRACE\n") != std::string::npos);
}

TEST_CASE("the dump of every non-secret option reads back to the same configuration") {
  // Every Herald option gets a value other than its default; the dump must
  // write each one as a setting (not a comment) and read back to the same
  // dump. Was: token-refresh-grace was dumped as "; ...=<redacted>" (its
  // name contains "token") and read back as the default.
  test_config base;
  // Key files the server can read (the dump runs start-up's checks).
  temp_file jwt_secret{"0123456789abcdef0123456789abcdef"};
  temp_file api_key{"0123456789abcdef"};
  const std::map<std::string, std::string> valid = {
    {"log-level", "debug"},           {"log-format", "json"},
    {"jwt-algorithm", "HS256"},       {"jwt-secret-file", jwt_secret.path},
    {"jwt-public-key", ""},           {"api-key-file", api_key.path},
    {"scheduler.policy", "stealing"}, {"redis-url", "redis://127.0.0.1:7/1"},
    {"channel-classes", "stream:* history-size=1 recovery=cache; user:* overflow=conflate"}};
  std::vector<std::string> args{"--dump-config"};
  std::vector<std::string> keys;
  for (const auto& opt : base.option_set()) {
    auto name = option_name(opt);
    if (!is_herald_option(opt) || is_secret(base, name))
      continue;
    auto type = std::string{opt.type_name().data(), opt.type_name().size()};
    std::string v;
    if (auto i = valid.find(name); i != valid.end())
      v = i->second;
    else if (opt.is_flag())
      v = "true";
    else if (type == "string")
      v = "set-" + name;
    else if (type == "timespan")
      v = "7ms";
    else if (auto cur = opt.get(); cur && caf::to_string(*cur) == "3")
      v = "4";
    else
      v = "3";
    args.push_back("--" + name + "=" + v);
    keys.push_back(std::string{opt.long_name().data(), opt.long_name().size()});
  }
  REQUIRE(keys.size() > 50);
  test_config cfg;
  auto first = load(cfg, args);
  INFO(first.err);
  REQUIRE(first.result == startup::exit_success);
  for (const auto& k : keys) {
    INFO(k);
    CHECK(first.out.find("\n" + k + "=") != std::string::npos);
    CHECK(first.out.find("; " + k + "=") == std::string::npos);
  }
  CHECK(first.out.find("\ntoken-refresh-grace=3\n") != std::string::npos);
  test_config again;
  CHECK_DUMP_READS_BACK(first.out, again);
  CHECK(again.token_refresh_grace == 3);
}

TEST_CASE("every help line is Herald's own text") {
  config cfg;
  auto help = help_text(cfg);
  // Was: "'stealing' (default) or 'sharing'" then "default 'sharing'" (CAF's text).
  CHECK(help.find("(default)") == std::string::npos);
  CHECK(help.find("nr. of") == std::string::npos);
  CHECK(help.find("default 'sharing'") != std::string::npos);
  CHECK(help.find("default number of cores (") != std::string::npos);
  auto caf_defaults = cfg.dump_content();
  for (const auto& opt : cfg.option_set()) {
    if (!is_herald_option(opt))
      continue;
    auto name = option_name(opt);
    INFO(name);
    auto text = option_description(opt);
    CHECK_FALSE(text.empty());
    CHECK(help.find(text) != std::string::npos);
    // A description never restates a default (one place for every default:
    // the bound value, printed after "default"). Was: "(25)", "(default
    // 8080, env PORT)" at the end of descriptions, written by hand.
    CHECK(text.find("default") == std::string::npos);
    CHECK_FALSE(std::regex_search(text, std::regex{R"(\(\d[^)]*\)$)"}));
    caf::optional<caf::config_value> value = opt.get();
    if (!value)
      if (auto c = caf::get_if(&cfg.content, name))
        value = *c;
    if (value) {
      auto said = caf::to_string(*value);
      if (said.size() > 1 && said.front() == '"')
        said = said.substr(1, said.size() - 2);
      if (!said.empty())
        CHECK(text.find("(" + said + ")") == std::string::npos);
    }
  }
}

namespace {

// The value an option holds in `cfg` (its default in a fresh config): the
// bound member, else what CAF reads from the content, else CAF's default;
// empty when CAF has none (`writable` false).
std::string value_text(const config& cfg, const caf::config_option& opt, bool& writable) {
  auto name = option_name(opt);
  auto caf_defaults = cfg.dump_content();
  caf::optional<caf::config_value> v = opt.get();
  if (!v)
    if (auto c = caf::get_if(&cfg.content, name))
      v = *c;
  if (!v)
    if (auto d = caf::get_if(&caf_defaults, name))
      v = *d;
  writable = v && !opt.check(*v);
  return v ? caf::to_string(*v) : std::string{};
}

std::string line_after(const std::string& text, std::size_t pos) {
  auto end = text.find('\n', pos);
  return text.substr(pos, end == std::string::npos ? end : end - pos);
}

} // namespace

TEST_CASE("every option's default is rendered from one value in --help, --help-markdown and "
          "--dump-config") {
  config cfg;
  auto help = help_text(cfg);
  auto markdown = options_markdown(cfg);
  config loaded;
  auto dumped = load(loaded, {"--dump-config"});
  INFO(dumped.err);
  REQUIRE(dumped.result == startup::exit_success);
  const auto& dump = dumped.out;
  std::size_t checked = 0;
  for (const auto& opt : cfg.option_set()) {
    if (!is_herald_option(opt))
      continue;
    auto full = option_name(opt);
    auto cat = std::string{opt.category().data(), opt.category().size()};
    auto key = std::string{opt.long_name().data(), opt.long_name().size()};
    INFO(full);
    bool writable = true;
    auto value = value_text(cfg, opt, writable);
    bool unset = value.empty(); // CAF decides
    auto note = std::string{default_note(full)};

    // --help: "  --name=<type>  description\n<42 spaces>default VALUE; env ..."
    auto at = help.find("\n  --" + full + (opt.is_flag() ? " " : "=<"));
    REQUIRE(at != std::string::npos);
    auto def = help.find("\n" + std::string(42, ' ') + "default ", at + 1);
    REQUIRE(def != std::string::npos);
    auto help_line = line_after(help, def + 1 + 42 + 8);
    auto help_default = help_line.substr(0, help_line.find("; env "));
    std::string expected = unset ? "(CAF decides)" : writable ? value : "(CAF's: " + value + ")";
    if (!note.empty())
      expected = note + (writable ? " (" + value + " here)" : "");
    CHECK(help_default == expected);

    // --help-markdown (the README table): "| `--name` | DEFAULT | ..."
    auto row = markdown.find("\n| `--" + full + "` | ");
    REQUIRE(row != std::string::npos);
    auto cell_start = row + 6 + full.size() + 4; // "\n| `--" name "` | "
    auto cell = markdown.substr(cell_start, markdown.find(" | ", cell_start) - cell_start);
    auto bare =
      value.size() > 1 && value.front() == '"' ? value.substr(1, value.size() - 2) : value;
    CHECK(cell == (!note.empty()     ? note
                   : unset           ? "`(CAF decides)`"
                   : value == "\"\"" ? "empty"
                   : writable        ? "`" + bare + "`"
                                     : "`(CAF's: " + value + ")`"));

    // --dump-config: "name=VALUE" in the option's [section], or a comment
    // when CAF's default is not writable in the option's type.
    auto section = dump.find("\n[" + cat + "]\n");
    REQUIRE(section != std::string::npos);
    auto next = dump.find("\n[", section + 1);
    auto body = dump.substr(section, next == std::string::npos ? next : next - section);
    if (unset)
      CHECK(body.find("\n; " + key + "=  (unset: CAF decides)\n") != std::string::npos);
    else if (writable)
      CHECK(body.find("\n" + key + "=" + value + "\n") != std::string::npos);
    else
      CHECK(body.find("\n; " + key + "=" + value + "  (CAF's default)\n") != std::string::npos);
    ++checked;
  }
  CHECK(checked > 50);
}

TEST_CASE("the defaults of the lower layers' option structs are the option table's") {
  // config takes these defaults from the value-initialized structs
  // (app/config.hpp defaults::); this checks the mapping (field, unit) and
  // the structs app/server.cpp fills without taking defaults from them.
  config cfg;
  auto s = cfg.session_options();
  const herald::net::session_options d{};
  CHECK(s.client_max_buffer_bytes == d.client_max_buffer_bytes);
  CHECK(s.write_timeout == d.write_timeout);
  CHECK(s.close_grace == d.close_grace);
  CHECK(s.close_grace_max == d.close_grace_max);
  CHECK(s.sse_heartbeat == d.sse_heartbeat);
  CHECK(s.sse_retry_ms == d.sse_retry_ms);
  CHECK(s.ws_ping_interval == d.ws_ping_interval);
  CHECK(s.ws_pong_timeout == d.ws_pong_timeout);
  CHECK(s.max_ws_message_bytes == d.max_ws_message_bytes);
  CHECK(s.ws_message_timeout == d.ws_message_timeout);
  CHECK(s.max_header_bytes == d.max_header_bytes);
  CHECK(s.max_publish_bytes == d.max_publish_bytes);
  CHECK(s.request_timeout == d.request_timeout);
  CHECK(s.max_channels_per_client == d.max_channels_per_client);
  CHECK(s.max_channels_per_publish == d.max_channels_per_publish);
  CHECK(s.max_header_count == d.max_header_count);
  CHECK(s.header_timeout == d.header_timeout);
  CHECK(s.ws_commands_per_second == d.ws_commands_per_second);
  CHECK(s.ws_commands_burst == d.ws_commands_burst);
  CHECK(s.ws_deflate_min_bytes == d.ws_deflate_min_bytes);
  CHECK(s.conflate_unsent_bytes == d.conflate_unsent_bytes);
  CHECK(s.max_connections_per_ip == d.max_connections_per_ip);
  CHECK(s.max_subscribe_attempts == d.max_subscribe_attempts);

  auto h = cfg.history_options();
  const herald::actors::history_options hd{};
  CHECK(h.size == hd.size);
  CHECK(h.ttl == hd.ttl);
  CHECK(h.idempotency_window == hd.idempotency_window);

  const herald::net::auth::policy pd{};
  CHECK(std::chrono::seconds(cfg.ws_auth_timeout) == pd.ws_auth_timeout);
  CHECK(std::chrono::seconds(cfg.token_refresh_grace) == pd.refresh_grace);
  const herald::net::auth::jwt_config jd{};
  CHECK(std::chrono::seconds(cfg.jwt_leeway) == jd.leeway);
  CHECK(herald::net::auth::parse_algorithm(cfg.jwt_algorithm) == jd.algorithm);

  // Filled field by field from config by app/server.cpp; their own defaults
  // serve the redis tests and must not disagree with the table's.
  const herald::net::redis::script_settings sd{};
  CHECK(sd.prefix == cfg.redis_prefix);
  CHECK(sd.history_size == cfg.history_size);
  CHECK(sd.history_ttl == std::chrono::seconds(cfg.history_ttl));
  CHECK(sd.idempotency_window == std::chrono::seconds(cfg.idempotency_window));
  const herald::net::redis::client::options rd; // as app/server.cpp makes it
  CHECK(rd.prefix == cfg.redis_prefix);
  CHECK(rd.pool_size == cfg.redis_pool_size);
  CHECK(rd.command_timeout == std::chrono::milliseconds(cfg.redis_command_timeout_ms));
  CHECK(rd.history_size == cfg.history_size);
  CHECK(rd.history_ttl == std::chrono::seconds(cfg.history_ttl));
  CHECK(rd.idempotency_window == std::chrono::seconds(cfg.idempotency_window));
  CHECK(rd.wait_replicas == cfg.redis_wait_replicas);
  const herald::net::redis::cluster_client::options cd{};
  CHECK(cd.command_timeout == std::chrono::milliseconds(cfg.redis_command_timeout_ms));
  CHECK(cd.wait_replicas == cfg.redis_wait_replicas);
  CHECK(cd.scripts.prefix == cfg.redis_prefix);
  CHECK(cd.scripts.history_size == cfg.history_size);

  // Filled by app/herald_service.cpp from config.
  const herald::actors::connection_options od{};
  CHECK(od.max_channels == cfg.max_channels_per_client);
  CHECK(od.ping_interval == std::chrono::seconds(cfg.ws_ping_interval));
}

namespace {

std::string read_source(const std::string& path) {
  std::ifstream in{std::string{HERALD_SOURCE_DIR} + "/" + path};
  REQUIRE(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

} // namespace

TEST_CASE("README's option table is the one herald --help-markdown prints") {
  auto readme = read_source("README.md");
  const std::string begin = "<!-- options: generated by `build/bin/herald --help-markdown` -->\n";
  const std::string end = "<!-- end of options -->";
  auto b = readme.find(begin);
  REQUIRE(b != std::string::npos);
  auto e = readme.find(end, b);
  REQUIRE(e != std::string::npos);
  auto table = readme.substr(b + begin.size(), e - b - begin.size());
  config cfg;
  CHECK(table == options_markdown(cfg));
  std::ostringstream out, err;
  CHECK(load_config(cfg, {"--help-markdown"}, {}, out, err) == startup::exit_success);
  CHECK(out.str() == options_markdown(cfg));
}

TEST_CASE("every --option the docs name exists, and the defaults they state are the real ones") {
  config cfg;
  // Meta options, the placeholder of `--name=value`, and herald-loadtest's
  // own option that docs/tuning.md names.
  std::set<std::string> names{"help",          "version", "dump-config", "config-file",
                              "help-markdown", "name",    "find-max"};
  for (const auto& opt : cfg.option_set())
    if (is_herald_option(opt))
      names.insert(option_name(opt));
  auto value_text = [&](const std::string& name) {
    auto opt = cfg.option_set().qualified_name_lookup(
      name.find('.') == std::string::npos ? "global." + name : name);
    REQUIRE(opt);
    if (auto v = opt->get())
      return caf::to_string(*v);
    if (auto v = caf::get_if(&cfg.content, name))
      return caf::to_string(*v); // CAF's options that Herald sets (scheduler.policy)
    auto caf_defaults = cfg.dump_content();
    auto v = caf::get_if(&caf_defaults, name);
    REQUIRE(v);
    return caf::to_string(*v);
  };
  std::regex option_ref{R"(`--([a-z][a-z0-9.-]*)[=`])"};
  // "`--name` (8192)", "`--name` (5 s)", "`--name` (20; 0: off)": a default.
  std::regex stated{R"(`--([a-z][a-z0-9.-]*)` \((\d+)[ ;),])"};
  // A row of a table with a default column: "| `--name` | 5 s | ...".
  std::regex row{R"(\n\| `--([a-z][a-z0-9.-]*)` \| ([^|]+) \|)"};
  // The value a default cell states, in the dump's words ("1 MiB" is
  // 1048576, "5 s" is 5, "off" is false, "(none)" is ""), or the note of a
  // machine-dependent default as is.
  auto stated_value = [&](const std::string& name, std::string cell) -> std::string {
    if (!default_note(name).empty())
      return cell;
    if (cell.size() > 1 && cell.front() == '`' && cell.back() == '`')
      cell = cell.substr(1, cell.size() - 2);
    if (cell == "off")
      return "false";
    if (cell == "(none)" || cell == "(not checked)" || cell == "empty")
      return "\"\"";
    std::smatch m;
    if (std::regex_match(cell, m, std::regex{R"((\d+)( s| ms| KiB| MiB)?)"})) {
      auto n = std::stoull(m[1]);
      if (m[2] == " KiB")
        n *= 1024;
      if (m[2] == " MiB")
        n *= 1024 * 1024;
      return std::to_string(n);
    }
    return "'" + cell + "'"; // an atom (scheduler.policy) or a string in the dump's quotes
  };
  for (auto doc : {"README.md", "docs/protocol.md", "docs/auth.md", "docs/cluster.md",
                   "docs/metrics.md", "docs/tuning.md", "docs/architecture.md"}) {
    auto text = read_source(doc);
    for (std::sregex_iterator i{text.begin(), text.end(), option_ref}, end; i != end; ++i) {
      INFO(doc << ": --" << (*i)[1]);
      CHECK(names.count((*i)[1]));
    }
    std::size_t checked = 0;
    for (std::sregex_iterator i{text.begin(), text.end(), stated}, end; i != end; ++i, ++checked) {
      INFO(doc << ": " << (*i)[0]);
      CHECK(value_text((*i)[1]) == (*i)[2].str());
    }
    // Tables with a default column: docs/auth.md's and docs/tuning.md's.
    if (std::string{doc} == "docs/auth.md" || std::string{doc} == "docs/tuning.md")
      for (std::sregex_iterator i{text.begin(), text.end(), row}, end; i != end; ++i, ++checked) {
        INFO(doc << ": " << (*i)[0]);
        auto name = (*i)[1].str();
        auto note = default_note(name);
        auto real = note.empty() ? value_text(name) : std::string{note};
        auto said = stated_value(name, (*i)[2].str());
        if (real.size() > 1 && real.front() == '"')
          real = "'" + real.substr(1, real.size() - 2) + "'";
        if (said == "''")
          said = "\"\"";
        if (real == "''")
          real = "\"\"";
        CHECK(said == real);
      }
    if (std::string{doc} == "docs/protocol.md")
      CHECK(checked >= 10);
    if (std::string{doc} == "docs/auth.md")
      CHECK(checked >= 8);
  }
}

// -- issue 19: one validation pass, redacted values, commented defaults -------

TEST_CASE("one run reports every start-up error with its source, before anything listens") {
  // Was: four runs for these four (the key check and the URL ran after
  // load_config, one message each).
  temp_file ini{"[global]\nhistory-size=0\n"};
  config cfg;
  auto r = load(cfg, {"--config-file=" + ini.path, "--jwt-algorithm=HS512"},
                {{"HERALD_API_KEY", "too-short"}, {"HERALD_REDIS_URL", "redis://host:notaport"}});
  INFO(r.err);
  CHECK(r.result == startup::exit_failure);
  CHECK(r.err.find("--history-size must be greater than 0 (from config file " + ini.path +
                   ", line 2)") != std::string::npos);
  CHECK(r.err.find("--jwt-algorithm must be HS256, RS256 or ES256 (from command line)") !=
        std::string::npos);
  CHECK(r.err.find("the environment variable HERALD_API_KEY: the API key must be at least 16 "
                   "bytes") != std::string::npos);
  CHECK(r.err.find("--redis-url: ") != std::string::npos);
  CHECK(r.err.find("(from environment variable HERALD_REDIS_URL)") != std::string::npos);
  CHECK(r.err.find("--redis-url: invalid Redis URL: the port must be a number") !=
        std::string::npos);

  SECTION("--dump-config runs the same pass: non-zero for values the server refuses") {
    // Was: exit 0 and a dump the server then refused.
    for (std::vector<std::string> bad :
         {std::vector<std::string>{"--dump-config", "--redis-url=redis+cluster://"},
          std::vector<std::string>{"--dump-config", "--jwt-algorithm=none"},
          std::vector<std::string>{"--dump-config", "--history-size=0"}}) {
      config c;
      auto d = load(c, bad, {{"HERALD_API_KEY", "short"}});
      INFO(bad[1]);
      CHECK(d.result == startup::exit_failure);
      CHECK(d.out.empty());
      CHECK(d.err.find("HERALD_API_KEY: the API key must be at least 16 bytes") !=
            std::string::npos);
    }
    // Missing keys are no error for a dump (they are kept out of files).
    config c;
    CHECK(load(c, {"--dump-config"}).result == startup::exit_success);
  }
}

TEST_CASE("a redacted value read back is refused, naming the option and where the secret goes") {
  config cfg;
  auto first = load(cfg, {"--dump-config", "--redis-url=redis://:s3cret-pw@127.0.0.1:6379/0"});
  INFO(first.err);
  REQUIRE(first.result == startup::exit_success);
  CHECK(first.out.find("s3cret-pw") == std::string::npos);
  REQUIRE(first.out.find("redis-url=\"redis://:***@127.0.0.1:6379/0\"") != std::string::npos);
  temp_file ini{first.out};

  // Was: read back, "***" became the Redis password and the instance never
  // became ready, silently.
  config again;
  auto second = load(again, {"--config-file=" + ini.path, "--insecure"});
  CHECK(second.result == startup::exit_failure);
  CHECK(second.err.find("--redis-url holds '***' as the password of its URL, the placeholder "
                        "--dump-config writes for a secret, not the secret itself (from config "
                        "file " +
                        ini.path) != std::string::npos);
  CHECK(second.err.find("in the environment variable HERALD_REDIS_URL (it wins over the config "
                        "file)") != std::string::npos);
  CHECK(second.err.find("s3cret") == std::string::npos);

  // The way the message points to: the URL with the password in the
  // environment, over the dumped file.
  config fixed;
  auto third = load(fixed, {"--config-file=" + ini.path, "--insecure"},
                    {{"HERALD_REDIS_URL", "redis://:s3cret-pw@127.0.0.1:6379/0"}});
  INFO(third.err);
  CHECK(third.result == startup::run);
  CHECK(fixed.redis_url == "redis://:s3cret-pw@127.0.0.1:6379/0");

  // The same on the command line and for a cluster URL; and a secret
  // option's <redacted>.
  config cli;
  auto c = load(cli, {"--insecure", "--redis-url=redis+cluster://:***@h1:7000,h2:7001"});
  CHECK(c.result == startup::exit_failure);
  CHECK(c.err.find("--redis-url holds '***' as the password of its URL") != std::string::npos);
  CHECK(c.err.find("(from command line): give the value with the secret in it") !=
        std::string::npos);
  test_config secret;
  auto s = load(secret, {"--insecure", "--jwt-secret=<redacted>"});
  CHECK(s.result == startup::exit_failure);
  CHECK(s.err.find("--jwt-secret holds '<redacted>'") != std::string::npos);
}

TEST_CASE("every commented line of the dump that names a value reads back as written") {
  // Was: "; max-throughput=-1  (CAF's default)", refused when uncommented
  // ("expected uint64").
  config cfg;
  auto dumped = load(cfg, {"--dump-config"});
  INFO(dumped.err);
  REQUIRE(dumped.result == startup::exit_success);
  std::istringstream in{dumped.out};
  std::string text;
  std::size_t uncommented = 0;
  bool header = true;
  for (std::string line; std::getline(in, line);) {
    if (header) { // "; herald effective configuration (...)"
      header = false;
      text += line + "\n";
      continue;
    }
    if (line.rfind("; ", 0) == 0) {
      INFO(line);
      // A note in words never has the form of a setting.
      auto eq = line.find('=');
      auto colon = line.find(':');
      CHECK((eq != std::string::npos && (colon == std::string::npos || eq < colon)) !=
            (colon != std::string::npos && (eq == std::string::npos || colon < eq)));
      if (eq != std::string::npos && (colon == std::string::npos || eq < colon)) {
        line = line.substr(2);
        ++uncommented;
      }
    }
    text += line + "\n";
  }
  temp_file ini{text};
  config again;
  auto back = load(again, {"--dump-config", "--config-file=" + ini.path});
  INFO(back.err);
  CHECK(back.result == startup::exit_success);
  CHECK(back.out == dumped.out);
  CHECK(dumped.out.find("\nmax-throughput=") != std::string::npos);
  CHECK(dumped.out.find("=-1") == std::string::npos);
}
