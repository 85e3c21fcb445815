// options: where each configuration value comes from, and the start-up
// commands that only print (help, dump-config, version).
//
// Every option of the server (app/config.hpp, CAF's `scheduler.*` and
// `work-stealing.*`, and any option added later to config's option set) is
// read from, highest precedence first:
//
//   1. the command line: `--name=value` (`--scheduler.max-threads=2`);
//   2. the environment: `HERALD_` + the name upper-cased with `-` and `.` as
//      `_` (`HERALD_CLIENT_MAX_BUFFER`, `HERALD_SCHEDULER_MAX_THREADS`); the
//      older `PORT` and `REDIS_URL` are aliases below `HERALD_PORT` and
//      `HERALD_REDIS_URL`;
//   3. a config file in CAF 0.17's INI format (`--config-file=PATH`, else
//      `HERALD_CONFIG_FILE`, else `caf-application.ini` in the working
//      directory if present): our options under `[global]`, CAF's under
//      `[scheduler]` etc.; strings quoted (`host="127.0.0.1"`), atoms in
//      single quotes (`policy='sharing'`);
//   4. the defaults: the initial values of config's members (app/config.hpp;
//      where they come from: the comment at the option table, app/config.cpp).
//
// CAF's own logger/middleman/stream/openssl/opencl options are not Herald
// options (Debian's CAF compiles its logger out; Herald uses no middleman) and
// are neither listed nor mapped from the environment.
//
// Called once on the main thread before the actor system exists.
#pragma once

#include "app/config.hpp"

#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace caf {
class config_option;
}

namespace herald::app {

/// Where an option's value came from (the highest-precedence source that set it).
enum class option_source : std::uint8_t { defaults, file, env, cli };

/// "default", "config file", "environment", "command line".
std::string_view to_string(option_source s) noexcept;

/// Environment variables: name -> value.
using environment = std::map<std::string, std::string>;

/// The process environment (`environ`).
environment process_environment();

/// Name on the command line and in messages, without the leading `--`:
/// `port` for our options (category `global`), `scheduler.max-threads` for
/// the others.
std::string option_name(const caf::config_option& opt);

/// Whether `opt` is a Herald option: listed in --help and --dump-config and
/// read from the environment. False for CAF's meta options (help,
/// long-help, dump-config, config-file) and its unused categories.
bool is_herald_option(const caf::config_option& opt);

/// Environment variable of the option named `name` (as option_name()):
/// `HERALD_` + upper-case, `-` and `.` become `_`.
std::string env_name(std::string_view name);

/// Whether the value of the option named `name` must never be printed or
/// logged: it is listed in `cfg.secret_options` (named explicitly, never
/// guessed from the name: `token-refresh-grace` is a number of seconds).
bool is_secret(const config& cfg, std::string_view name);

/// Herald's description of `opt` for --help and the README table: the text
/// given where the option is declared (app/config.cpp), or, for CAF's
/// `scheduler.*` and `work-stealing.*` options, Herald's own text (CAF's
/// would contradict the defaults Herald sets). Empty for an option Herald has
/// no text for (a test requires one for every listed option).
std::string option_description(const caf::config_option& opt);

/// The default of `name` as documented where it depends on the machine
/// ("number of cores" for `io-threads` and `scheduler.max-threads`,
/// "unlimited" for `scheduler.max-throughput`); empty for the others, whose
/// default is their value in a fresh config.
std::string_view default_note(std::string_view name);

/// `value` with the password of a URL's user info (`scheme://user:PASS@host`)
/// replaced by `***`; other text unchanged.
std::string redact_url(std::string_view value);

/// What main() does after load_config().
enum class startup { run, exit_success, exit_failure };

/// Fills `cfg` from the config file, the environment and the command line
/// (precedence and names above), then runs config::validate().
///
/// Handles the print-only commands first: `version` / `--version` (build
/// info line), `--help` / `-h` (help_text), `--help-markdown`
/// (options_markdown), `--dump-config` (dump_config after loading
/// everything).
///
/// Every source is read in full and every value that parses is applied, so
/// one run reports every problem: unknown options, bad values, config file
/// syntax errors and each validate() failure (validate() names one option at
/// a time; after each message that option goes back to its default and
/// validate() runs again).
///
/// @param args the command line without the program name.
/// @param env the environment (process_environment() in production).
/// @param out receives the help, version and dump-config text.
/// @param err receives one message per error, naming the option and its
///        source: a config file that cannot be opened, a config file line
///        that is not `name=value` or `[section]` (file and line, in plain
///        words), an unknown option or section, a value of the wrong
///        type or out of range (from the file, an environment variable or an
///        argument), a stray positional argument, or a validate() failure.
/// @param sources if not null, receives the source of every option that a
///        file, variable or argument set (keys are option_name()s; options
///        not listed keep their defaults).
/// @returns run, exit_success (printed something) or exit_failure (error).
startup load_config(config& cfg, const std::vector<std::string>& args, const environment& env,
                    std::ostream& out, std::ostream& err,
                    std::map<std::string, option_source>* sources = nullptr);

/// The effective configuration in the config-file format (INI sections,
/// one `name=value` per option), readable back with --config-file to the
/// same configuration. Secret options (is_secret) that are set appear only
/// as a comment `; name=<redacted>`, and URL passwords as `***`.
std::string dump_config(const config& cfg);

/// `--help` text: usage, precedence, and every Herald option with its type,
/// description (units), default and environment variable.
std::string help_text(const config& cfg);

/// The option table of README.md ("Configuration") in Markdown, from the
/// same definitions as help_text(): one row per Herald option with its
/// default and environment variable. Printed by `herald --help-markdown`; a
/// test checks that README.md holds exactly this text.
std::string options_markdown(const config& cfg);

/// One line: `herald <version> (commit <git>, <build type>, <compiler>,
/// CAF <x.y.z>, Boost <x.y.z>, spdlog <x.y.z>)`. The commit is recorded at
/// configure time ("unknown" outside a git checkout).
std::string build_info();

} // namespace herald::app
