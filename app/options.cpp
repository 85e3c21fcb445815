#include "app/options.hpp"

#include "app/auth_setup.hpp"
#include "app/build_info.hpp"
#include "net/wire/enum_names.hpp"
#include "net/redis/url.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/config.hpp>
#include <caf/config_option.hpp>
#include <caf/config_option_set.hpp>
#include <caf/settings.hpp>
#include <boost/version.hpp>
#include <spdlog/version.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

extern char** environ;

namespace herald::app {

namespace {

std::string str(caf::string_view v) {
  return std::string{v.data(), v.size()};
}

// CAF options that are not Herald's: print-only switches handled here, and
// categories of CAF parts Herald does not use (see the header).
const std::set<std::string, std::less<>> meta_options = {"help", "long-help", "dump-config",
                                                         "config-file"};
const std::set<std::string, std::less<>> foreign_categories = {"stream", "logger", "middleman",
                                                               "openssl", "opencl"};

// Older variables kept as documented aliases, below their HERALD_ names.
const std::map<std::string, std::string> env_aliases = {{"port", "PORT"},
                                                        {"redis-url", "REDIS_URL"}};

const caf::config_option* find_option(const config& cfg, std::string_view name) {
  auto qualified =
    name.find('.') == std::string_view::npos ? "global." + std::string{name} : std::string{name};
  return cfg.option_set().qualified_name_lookup(qualified);
}

// Shown in messages: secrets never, long values shortened.
std::string shown(const config& cfg, std::string_view name, std::string_view value) {
  if (is_secret(cfg, name))
    return "<redacted>";
  auto v = redact_url(value);
  if (v.size() > 80)
    v = v.substr(0, 77) + "...";
  return "'" + v + "'";
}

// Edit distance (insertions, deletions, substitutions, swaps of two
// neighbours) between `a` and `b`.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
        {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// "; did you mean <prefix><option> (<its description>)?" for the Herald
// option nearest to the unknown `name`: `name`-file when there is one (a
// secret's option is the file holding it: --jwt-secret -> --jwt-secret-file,
// whose description names its environment variable), else the nearest by
// edit distance, when at most a quarter of the name (at least 2) differs.
// Empty when no option is near.
std::string did_you_mean(const config& cfg, std::string_view name, std::string_view prefix) {
  const caf::config_option* best = nullptr;
  std::size_t best_distance = std::max<std::size_t>(2, name.size() / 4) + 1;
  const auto file = std::string{name} + "-file";
  for (const auto& opt : cfg.option_set()) {
    if (!is_herald_option(opt))
      continue;
    auto candidate = option_name(opt);
    if (candidate == file) {
      best = &opt;
      break;
    }
    if (auto dist = edit_distance(name, candidate); dist < best_distance) {
      best_distance = dist;
      best = &opt;
    }
  }
  if (best == nullptr)
    return {};
  auto text = "; did you mean " + std::string{prefix} + option_name(*best);
  if (auto what = option_description(*best); !what.empty())
    text += " (" + what + ")";
  return text + "?";
}

// One value from one source, already type-checked.
struct setting {
  std::string name;
  caf::config_value value;
  option_source source;
};

std::string trim(std::string_view s) {
  auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos)
    return {};
  auto e = s.find_last_not_of(" \t\r");
  return std::string{s.substr(b, e - b + 1)};
}

// `line` without a `;` comment that is outside quotes. Sets `open_quote`
// when a quote is not closed.
std::string strip_comment(std::string_view line, char& open_quote) {
  open_quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (open_quote != 0) {
      if (c == '\\')
        ++i;
      else if (c == open_quote)
        open_quote = 0;
    } else if (c == '"' || c == '\'') {
      open_quote = c;
    } else if (c == ';' || c == '#') {
      return std::string{line.substr(0, i)};
    }
  }
  return std::string{line};
}

class loader {
public:
  loader(config& cfg, std::ostream& err)
    : cfg_(cfg),
      err_(err) {
    // Before anything is parsed: CAF's config_option::parse() also stores
    // into a bound option.
    for (const auto& opt : cfg_.option_set())
      if (auto v = opt.get())
        defaults_.emplace(option_name(opt), std::move(*v));
  }

  // Parses `text` for option `name` from a source. false: reported.
  bool parse_text(std::string_view name, std::string_view text, option_source src,
                  const std::string& where) {
    auto opt = find_option(cfg_, name);
    if (opt == nullptr || meta_options.count(std::string{name})) {
      err_ << "herald: unknown option --" << name << " (" << where << ")"
           << did_you_mean(cfg_, name, "--") << "\n";
      return false;
    }
    std::string_view input = text;
    auto value = opt->parse(caf::string_view{input.data(), input.size()});
    if (!value) {
      err_ << "herald: bad value " << shown(cfg_, name, text) << " for --" << name << " (" << where
           << "): expected " << str(opt->type_name()) << "\n";
      return false;
    }
    settings_.push_back({std::string{name}, std::move(*value), src});
    return true;
  }

  // Reads a config file line by line: `[section]`, `name=value` (value in
  // CAF's syntax: strings in double quotes, atoms in single quotes), blank
  // lines and `;` comments. Every bad line is reported with its number, in
  // plain words, and reading goes on. false: something was reported.
  bool load_file(const std::string& path, bool explicit_path) {
    std::ifstream in{path};
    if (!in) {
      if (!explicit_path)
        return true; // the default file is optional
      err_ << "herald: cannot open config file '" << path << "'\n";
      return false;
    }
    bool ok = true;
    std::string section = "global";
    std::string raw;
    for (std::size_t number = 1; std::getline(in, raw); ++number) {
      auto where = "config file " + path + ", line " + std::to_string(number);
      auto fail = [&](const std::string& what) {
        err_ << "herald: " << what << " (" << where << ")\n";
        ok = false;
      };
      char open_quote = 0;
      auto line = trim(strip_comment(raw, open_quote));
      if (open_quote != 0) {
        fail(std::string{"a value opens a "} + (open_quote == '"' ? "double" : "single") +
             " quote and does not close it");
        continue;
      }
      if (line.empty())
        continue;
      if (line.front() == '[') {
        auto name = line.back() == ']' ? trim(line.substr(1, line.size() - 2)) : std::string{};
        if (name.empty()) {
          fail("expected a section name in brackets, e.g. [scheduler]");
          continue;
        }
        section = name;
        continue;
      }
      auto eq = line.find('=');
      if (eq == std::string::npos) {
        fail("expected name=value or [section], found '" + line.substr(0, 40) + "'");
        continue;
      }
      auto key = trim(line.substr(0, eq));
      auto text = trim(line.substr(eq + 1));
      auto name = section == "global" ? key : section + "." + key;
      if (key.empty()) {
        fail("a line starts with '=': the option name is missing");
        continue;
      }
      auto opt = find_option(cfg_, name);
      if (opt == nullptr || meta_options.count(name) || !is_herald_option(*opt)) {
        err_ << "herald: unknown option " << name
             << (section == "global" ? std::string{} : " in section [" + section + "]") << " ("
             << where << ")" << did_you_mean(cfg_, name, "") << "\n";
        ok = false;
        continue;
      }
      if (text.empty()) {
        fail(name + " has no value; write " + key + "=<" + str(opt->type_name()) + ">");
        continue;
      }
      auto value = caf::config_value::parse(caf::string_view{text.data(), text.size()});
      bool quoted = text.front() == '"';
      if (!value || opt->check(*value) || (opt->type_name() == "string" && !quoted)) {
        auto expected = str(opt->type_name());
        if (expected == "string")
          expected += " in double quotes, e.g. " + key + "=\"...\"";
        else if (expected == "atom")
          expected += " in single quotes, e.g. " + key + "='...'";
        fail("bad value " + shown(cfg_, name, text) + " for " + name + ": expected " + expected);
        continue;
      }
      settings_.push_back({name, std::move(*value), option_source::file});
      file_lines_[name] = number;
    }
    return ok;
  }

  bool load_env(const environment& env) {
    bool ok = true;
    for (const auto& opt : cfg_.option_set()) {
      if (!is_herald_option(opt))
        continue;
      auto name = option_name(opt);
      auto var = env_name(name);
      auto i = env.find(var);
      if (i == env.end()) {
        auto alias = env_aliases.find(name);
        if (alias == env_aliases.end())
          continue;
        i = env.find(alias->second);
        // An empty alias means unset (scripts often export PORT="").
        if (i == env.end() || i->second.empty())
          continue;
        var = alias->second;
      }
      ok = parse_text(name, i->second, option_source::env, "environment variable " + var) && ok;
    }
    return ok;
  }

  bool load_cli(const std::vector<std::string>& args) {
    bool ok = true;
    for (const auto& arg : args) {
      if (arg.rfind("--", 0) != 0 || arg.size() == 2) {
        err_ << "herald: unexpected argument '" << arg << "' (command line; options are "
             << "--name=value, see herald --help)\n";
        ok = false;
        continue;
      }
      auto eq = arg.find('=');
      auto name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      if (name == "config-file" && (eq == std::string::npos || eq + 1 == arg.size())) {
        err_ << "herald: option --config-file needs a value: --config-file=PATH (command line)\n";
        ok = false;
        continue;
      }
      if (name == "config-file" || name == "dump-config")
        continue; // handled by load_config
      std::string value;
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
      } else if (auto opt = find_option(cfg_, name); opt != nullptr && opt->is_flag()) {
        value = "true";
      } else if (opt != nullptr) {
        err_ << "herald: option --" << name << " needs a value: --" << name << "=<"
             << str(opt->type_name()) << "> (command line)\n";
        ok = false;
        continue;
      }
      ok = parse_text(name, value, option_source::cli, "command line") && ok;
    }
    return ok;
  }

  // Stores every collected value, lowest precedence first.
  void apply(std::map<std::string, option_source>& sources) {
    std::stable_sort(settings_.begin(), settings_.end(),
                     [](const setting& a, const setting& b) { return a.source < b.source; });
    for (auto& s : settings_) {
      auto opt = find_option(cfg_, s.name);
      opt->store(s.value);                     // bound options: the config member
      caf::put(cfg_.content, s.name, s.value); // CAF reads scheduler.* from here
      sources[s.name] = s.source;
    }
  }

  // Puts option `name` back to its value before loading. false: it had none.
  bool reset(const std::string& name) {
    auto i = defaults_.find(name);
    if (i == defaults_.end())
      return false;
    find_option(cfg_, name)->store(i->second);
    caf::put(cfg_.content, name, i->second);
    return true;
  }

  // The value of `name` that won (highest precedence), as text: a string
  // without its quotes. Empty when no source set it.
  std::string final_text(const std::string& name) const {
    const setting* won = nullptr;
    for (const auto& s : settings_)
      if (s.name == name && (won == nullptr || s.source >= won->source))
        won = &s;
    if (won == nullptr)
      return {};
    if (auto v = caf::get_if<std::string>(&won->value))
      return *v;
    return caf::to_string(won->value);
  }

  // The line of the config file that set `name` (0: none).
  std::size_t file_line(const std::string& name) const {
    auto i = file_lines_.find(name);
    return i == file_lines_.end() ? 0 : i->second;
  }

private:
  config& cfg_;
  std::ostream& err_;
  std::vector<setting> settings_;
  std::map<std::string, caf::config_value> defaults_;
  std::map<std::string, std::size_t> file_lines_;
};

// The option a validate() message is about: its first "--name".
std::string option_in_message(const std::string& msg) {
  auto pos = msg.find("--");
  if (pos == std::string::npos)
    return {};
  auto end = pos + 2;
  while (end < msg.size() &&
         (std::isalnum(static_cast<unsigned char>(msg[end])) || msg[end] == '-' || msg[end] == '.'))
    ++end;
  return msg.substr(pos + 2, end - pos - 2);
}

std::string source_text(const std::string& name, option_source src, const std::string& file,
                        std::size_t line, const environment& env) {
  switch (src) {
  case option_source::defaults:
    return "the default";
  case option_source::file:
    return "config file " + file + (line > 0 ? ", line " + std::to_string(line) : "");
  case option_source::cli:
    return "command line";
  case option_source::env: {
    auto var = env_name(name);
    if (!env.count(var))
      if (auto a = env_aliases.find(name); a != env_aliases.end())
        var = a->second;
    return "environment variable " + var;
  }
  }
  return "?";
}

// What in `value` is a placeholder --dump-config writes instead of a secret
// (for a message), or empty: the whole value `<redacted>` (a secret
// option), or `***` as the password of a URL (redact_url()).
std::string redacted_part(std::string_view value) {
  if (value == "<redacted>")
    return "'<redacted>'";
  auto scheme = value.find("://");
  if (scheme == std::string_view::npos)
    return {};
  auto start = scheme + 3;
  auto end = value.find_first_of("/?#", start);
  auto authority = value.substr(start, end == std::string_view::npos ? end : end - start);
  auto at = authority.rfind('@');
  auto colon = authority.find(':');
  if (at == std::string_view::npos || colon == std::string_view::npos || colon > at)
    return {};
  return authority.substr(colon + 1, at - colon - 1) == "***" ? "'***' as the password of its URL"
                                                              : std::string{};
}

// Herald's text for CAF's options (CAF's own says "'stealing' (default)",
// which Herald's default contradicts).
const std::map<std::string, std::string, std::less<>> caf_descriptions = {
  {"scheduler.policy",
   "'sharing' (one queue for all workers) or 'stealing' (a queue per worker, idle workers "
   "steal)"},
  {"scheduler.max-threads", "CAF worker threads that run the actors"},
  {"scheduler.max-throughput",
   "messages an actor handles before its worker turns to another actor"},
  {"scheduler.enable-profiling",
   "write CAF's scheduler profile to --scheduler.profiling-output-file"},
  {"scheduler.profiling-resolution", "interval between two scheduler profile samples"},
  {"scheduler.profiling-output-file", "file the scheduler profile is written to"},
  {"work-stealing.aggressive-poll-attempts",
   "'stealing' policy: polls of a worker's own queue in the first, aggressive phase"},
  {"work-stealing.aggressive-steal-interval",
   "'stealing' policy: in the aggressive phase, try to steal every this many polls"},
  {"work-stealing.moderate-poll-attempts",
   "'stealing' policy: polls in the second, moderate phase"},
  {"work-stealing.moderate-steal-interval",
   "'stealing' policy: in the moderate phase, try to steal every this many polls"},
  {"work-stealing.moderate-sleep-duration",
   "'stealing' policy: sleep between two polls in the moderate phase"},
  {"work-stealing.relaxed-steal-interval",
   "'stealing' policy: in the last, relaxed phase, try to steal every this many polls"},
  {"work-stealing.relaxed-sleep-duration",
   "'stealing' policy: sleep between two polls in the relaxed phase"},
};

// Defaults that depend on the machine, documented in words.
const std::map<std::string, std::string, std::less<>> default_notes = {
  {"io-threads", "number of cores"},
  {"scheduler.max-threads", "number of cores"},
  {"scheduler.max-throughput", "unlimited"},
};

// The value to show for `opt`: the bound member, else the content CAF
// reads, else CAF's built-in default.
caf::optional<caf::config_value> value_of(const config& cfg, const caf::config_option& opt,
                                          const caf::settings& caf_defaults) {
  if (auto v = opt.get())
    return v;
  auto name = option_name(opt);
  if (auto v = caf::get_if(&cfg.content, name))
    return *v;
  if (auto v = caf::get_if(&caf_defaults, name))
    return *v;
  return caf::none;
}

// Herald's options, [global] first, then the others in declaration order.
std::vector<const caf::config_option*> listed_options(const config& cfg) {
  std::vector<const caf::config_option*> out;
  for (const auto& opt : cfg.option_set())
    if (is_herald_option(opt))
      out.push_back(&opt);
  std::stable_partition(out.begin(), out.end(),
                        [](const caf::config_option* o) { return o->category() == "global"; });
  return out;
}

// The default of `opt` as shown by --help (`with_here`: a machine-dependent
// default also says its value here) and the README table.
std::string default_text(const config& cfg, const caf::config_option& opt,
                         const caf::settings& caf_defaults, bool with_here) {
  auto full = option_name(opt);
  auto value = value_of(cfg, opt, caf_defaults);
  auto text = !value              ? std::string{"(CAF decides)"}
              : opt.check(*value) ? "(CAF's: " + caf::to_string(*value) + ")"
                                  : caf::to_string(*value);
  if (is_secret(cfg, full) && text != "\"\"")
    return "<redacted>";
  if (auto note = default_note(full); !note.empty())
    return std::string{note} +
           (with_here && value && !opt.check(*value) ? " (" + text + " here)" : "");
  return redact_url(text);
}

} // namespace

std::string_view to_string(option_source s) noexcept {
  return net::enum_name<option_source::defaults, option_source::cli>(
    s, {"default", "config file", "environment", "command line"}, "?");
}

environment process_environment() {
  environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv{*e};
    auto eq = kv.find('=');
    if (eq != std::string_view::npos)
      env.emplace(std::string{kv.substr(0, eq)}, std::string{kv.substr(eq + 1)});
  }
  return env;
}

std::string option_name(const caf::config_option& opt) {
  auto cat = str(opt.category());
  auto name = str(opt.long_name());
  return cat == "global" ? name : cat + "." + name;
}

bool is_herald_option(const caf::config_option& opt) {
  auto cat = str(opt.category());
  if (foreign_categories.count(cat))
    return false;
  return cat != "global" || !meta_options.count(str(opt.long_name()));
}

std::string env_name(std::string_view name) {
  std::string out = "HERALD_";
  for (char c : name)
    out +=
      (c == '-' || c == '.') ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool is_secret(const config& cfg, std::string_view name) {
  return cfg.secret_options.find(name) != cfg.secret_options.end();
}

std::string option_description(const caf::config_option& opt) {
  if (opt.category() == "global")
    return str(opt.description());
  auto i = caf_descriptions.find(option_name(opt));
  return i == caf_descriptions.end() ? std::string{} : i->second;
}

std::string_view default_note(std::string_view name) {
  auto i = default_notes.find(name);
  return i == default_notes.end() ? std::string_view{} : std::string_view{i->second};
}

std::string redact_url(std::string_view value) {
  auto scheme = value.find("://");
  if (scheme == std::string_view::npos)
    return std::string{value};
  auto start = scheme + 3;
  auto end = value.find_first_of("/?#", start);
  auto authority = value.substr(start, end == std::string_view::npos ? end : end - start);
  auto at = authority.rfind('@');
  if (at == std::string_view::npos)
    return std::string{value};
  auto colon = authority.find(':');
  if (colon == std::string_view::npos || colon > at)
    return std::string{value};
  std::string out{value.substr(0, start + colon + 1)};
  out += "***";
  out += value.substr(start + at);
  return out;
}

startup load_config(config& cfg, const std::vector<std::string>& args, const environment& env,
                    std::ostream& out, std::ostream& err,
                    std::map<std::string, option_source>* sources_out) {
  // Print-only commands first: they work whatever else is wrong.
  bool dump = false;
  std::string file;
  bool explicit_file = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    if ((i == 0 && a == "version") || a == "--version") {
      out << build_info() << "\n";
      return startup::exit_success;
    }
    if (a == "--help" || a == "-h" || a == "--long-help") {
      out << help_text(cfg);
      return startup::exit_success;
    }
    if (a == "--help-markdown") {
      out << options_markdown(cfg);
      return startup::exit_success;
    }
    if (a == "--dump-config")
      dump = true;
    if (a.rfind("--config-file=", 0) == 0) {
      file = a.substr(14);
      explicit_file = true;
    }
  }
  if (!explicit_file) {
    if (auto i = env.find("HERALD_CONFIG_FILE"); i != env.end() && !i->second.empty()) {
      file = i->second;
      explicit_file = true;
    } else {
      file = "caf-application.ini";
    }
  }
  loader load{cfg, err};
  // Every source is read in full and what parses is applied, so one run
  // reports every bad value, then every validate() failure.
  bool ok = load.load_file(file, explicit_file);
  ok = load.load_env(env) && ok;
  ok = load.load_cli(args) && ok;
  std::map<std::string, option_source> sources;
  load.apply(sources);
  if (explicit_file)
    cfg.config_file_path = file;
  std::set<std::string> reported;
  for (auto msg = cfg.validate(); !msg.empty(); msg = cfg.validate()) {
    auto name = option_in_message(msg);
    auto src = sources.count(name) ? sources[name] : option_source::defaults;
    err << "herald: " << msg << " (from " << source_text(name, src, file, load.file_line(name), env)
        << ")\n";
    ok = false;
    // validate() stops at the first bad option: put it back to its default
    // and ask again, to report the next one too.
    if (name.empty() || !reported.insert(name).second || !load.reset(name))
      break;
  }
  auto report = [&](const std::string& msg) {
    auto name = option_in_message(msg);
    auto src = sources.count(name) ? sources[name] : option_source::defaults;
    err << "herald: " << msg;
    if (!name.empty())
      err << " (from " << source_text(name, src, file, load.file_line(name), env) << ")";
    err << "\n";
    ok = false;
  };
  // A redacted value read back (a --dump-config output used as the config
  // file): only the value that won counts, so a secret given in the
  // environment over a dumped file is fine.
  for (const auto& [name, src] : sources) {
    auto value = load.final_text(name);
    if (auto what = redacted_part(value); !what.empty()) {
      auto from = source_text(name, src, file, load.file_line(name), env);
      err << "herald: --" << name << " holds " << what
          << ", the placeholder --dump-config writes for a secret, not the secret itself (from "
          << from << "): "
          << (src == option_source::file
                ? "give the value with the secret in the environment variable " + env_name(name) +
                    " (it wins over the config file) or write it into the file"
                : "give the value with the secret in it")
          << "\n";
      ok = false;
    }
  }
  // The checks that need several options or other files, in the same pass:
  // the Redis URL and the authentication options (app/auth_setup.hpp).
  if (!cfg.redis_url.empty() && redacted_part(cfg.redis_url).empty()) {
    std::string why;
    bool valid = true;
    if (net::redis::is_cluster_url(cfg.redis_url)) {
      net::redis::cluster_url seeds;
      valid = net::redis::parse_cluster_url(cfg.redis_url, seeds, why);
    } else {
      net::redis::url target;
      valid = net::redis::parse_url(cfg.redis_url, target, why);
    }
    if (!valid)
      report("--redis-url: " + why);
  }
  // A dump is usually made without the keys (they are kept out of files), so
  // missing keys are reported only when the server is to run.
  for (const auto& msg : load_auth(cfg, env, !dump))
    report(msg);
  if (!ok) {
    err << "(see herald --help)\n";
    return startup::exit_failure;
  }
  if (sources_out != nullptr)
    *sources_out = sources;
  if (dump) {
    out << dump_config(cfg);
    return startup::exit_success;
  }
  return startup::run;
}

namespace {

// The listed options in order: `on_section(name)` before the first option of
// each category ("global", "scheduler", ...), then `on_option(opt)`.
template <class OnSection, class OnOption>
void for_each_by_section(const config& cfg, OnSection on_section, OnOption on_option) {
  std::string section;
  for (auto* o : listed_options(cfg)) {
    auto cat = str(o->category());
    if (cat != section) {
      on_section(cat);
      section = cat;
    }
    on_option(*o);
  }
}

} // namespace

std::string dump_config(const config& cfg) {
  auto caf_defaults = cfg.dump_content();
  std::ostringstream out;
  out << "; herald effective configuration (" << build_info() << ")\n";
  for_each_by_section(
    cfg, [&](const std::string& section) { out << "\n[" << section << "]\n"; },
    [&](const caf::config_option& opt) {
      auto name = str(opt.long_name());
      auto full = option_name(opt);
      auto value = value_of(cfg, opt, caf_defaults);
      // A commented `; name=value` line is always a value this option accepts
      // as written (uncommented, it reads back); what is not one is said in
      // words, without `=`.
      if (!value) {
        out << "; " << name << ": unset, CAF decides\n";
        return;
      }
      if (opt.check(*value)) {
        // CAF's built-in default is not writable in the option's type (none
        // of the listed options today: Herald sets a writable default).
        out << "; " << name << ": CAF's default, which no value of type " << str(opt.type_name())
            << " writes\n";
        return;
      }
      auto text = caf::to_string(*value);
      if (is_secret(cfg, full) && text != "\"\"") {
        out << "; " << name << "=<redacted>\n";
        return;
      }
      out << name << "=" << redact_url(text) << "\n";
    });
  return out.str();
}

std::string help_text(const config& cfg) {
  auto caf_defaults = cfg.dump_content();
  std::ostringstream out;
  out << "herald: real-time push server (SSE and WebSocket)\n\n"
         "Usage: herald [--option=value ...]     run the server\n"
         "       herald version | --version      print the build info line\n"
         "       herald --dump-config [...]      print the effective configuration (INI)\n"
         "       herald --help                   this text\n"
         "       herald --help-markdown          the option table of README.md\n\n"
         "Every option is read from, highest precedence first: the command line\n"
         "(--name=value), the environment (HERALD_ + name upper-cased, '-' and '.' as '_';\n"
         "PORT and REDIS_URL are older aliases below HERALD_PORT/HERALD_REDIS_URL), a config\n"
         "file in CAF's INI format (--config-file=PATH, else $HERALD_CONFIG_FILE, else\n"
         "caf-application.ini in the working directory if present; our options under\n"
         "[global], CAF's under [scheduler] etc.; strings in double quotes, atoms in single\n"
         "quotes), then the defaults. Bad values stop start-up; every one is reported, naming\n"
         "the option and its source (config file lines by number).\n"
         "Durations are in seconds unless the name or text says ms; sizes in bytes.\n\n";
  for_each_by_section(
    cfg, [&](const std::string& section) { out << "[" << section << "]\n"; },
    [&](const caf::config_option& opt) {
      auto full = option_name(opt);
      std::string name = "--" + full;
      if (!opt.is_flag())
        name += "=<" + str(opt.type_name()) + ">";
      out << "  " << name;
      if (name.size() < 40)
        out << std::string(40 - name.size(), ' ');
      else
        out << "\n" << std::string(42, ' ');
      out << option_description(opt) << "\n" << std::string(42, ' ');
      out << "default " << default_text(cfg, opt, caf_defaults, true) << "; env " << env_name(full);
      if (auto a = env_aliases.find(full); a != env_aliases.end())
        out << " or " << a->second;
      out << "\n";
    });
  return out.str();
}

std::string options_markdown(const config& cfg) {
  auto caf_defaults = cfg.dump_content();
  std::ostringstream out;
  out << "| option | default | environment | meaning |\n| --- | --- | --- | --- |\n";
  for (auto* o : listed_options(cfg)) {
    auto full = option_name(*o);
    auto text = default_text(cfg, *o, caf_defaults, false);
    if (text == "\"\"")
      text = "empty";
    else if (default_note(full).empty())
      text = "`" +
             (text.size() > 1 && text.front() == '"' ? text.substr(1, text.size() - 2) : text) +
             "`";
    auto env = "`" + env_name(full) + "`";
    if (auto a = env_aliases.find(full); a != env_aliases.end())
      env += ", `" + a->second + "`";
    auto meaning = option_description(*o);
    for (auto& c : meaning)
      if (c == '|')
        c = '/';
    out << "| `--" << full << "` | " << text << " | " << env << " | " << meaning << " |\n";
  }
  return out.str();
}

std::string build_info() {
  std::ostringstream out;
  out << "herald " << HERALD_VERSION << " (commit " << HERALD_GIT_COMMIT << ", "
      << HERALD_BUILD_TYPE << ", " << HERALD_COMPILER << ", CAF " << CAF_MAJOR_VERSION << "."
      << CAF_MINOR_VERSION << "." << CAF_PATCH_VERSION << ", Boost " << BOOST_VERSION / 100000
      << "." << BOOST_VERSION / 100 % 1000 << "." << BOOST_VERSION % 100 << ", spdlog "
      << SPDLOG_VER_MAJOR << "." << SPDLOG_VER_MINOR << "." << SPDLOG_VER_PATCH << ")";
  return out.str();
}

} // namespace herald::app
