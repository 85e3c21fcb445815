#include "app/options.hpp"

#include "app/build_info.hpp"

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
  auto qualified = name.find('.') == std::string_view::npos ? "global." + std::string{name}
                                                             : std::string{name};
  return cfg.option_set().qualified_name_lookup(qualified);
}

// Shown in messages: secrets never, long values shortened.
std::string shown(std::string_view name, std::string_view value) {
  if (is_secret(name))
    return "<redacted>";
  auto v = redact_url(value);
  if (v.size() > 80)
    v = v.substr(0, 77) + "...";
  return "'" + v + "'";
}

std::string render(const config& cfg, const caf::error& err) {
  // CAF renders parser errors as "parser_error(code, context)"; the context
  // repeats the argument, which we already name.
  auto text = const_cast<config&>(cfg).render(err);
  return text;
}

// One value from one source, already type-checked.
struct setting {
  std::string name;
  caf::config_value value;
  option_source source;
};

class loader {
public:
  loader(config& cfg, std::ostream& err) : cfg_(cfg), err_(err) {
  }

  // Parses `text` for option `name` from a source. false: reported.
  bool parse_text(std::string_view name, std::string_view text, option_source src,
                  const std::string& where) {
    auto opt = find_option(cfg_, name);
    if (opt == nullptr || meta_options.count(std::string{name})) {
      err_ << "herald: unknown option --" << name << " (" << where << ")\n";
      return false;
    }
    std::string_view input = text;
    auto value = opt->parse(caf::string_view{input.data(), input.size()});
    if (!value) {
      err_ << "herald: bad value " << shown(name, text) << " for --" << name << " (" << where
           << "): expected " << str(opt->type_name()) << "\n";
      return false;
    }
    settings_.push_back({std::string{name}, std::move(*value), src});
    return true;
  }

  // Checks a value the INI parser produced. false: reported.
  bool check_value(const std::string& name, const caf::config_value& value,
                   const std::string& where) {
    auto opt = find_option(cfg_, name);
    if (opt == nullptr || meta_options.count(name)) {
      err_ << "herald: unknown option " << name << " (" << where << ")\n";
      return false;
    }
    if (auto e = opt->check(value)) {
      err_ << "herald: bad value " << shown(name, caf::to_string(value)) << " for " << name
           << " (" << where << "): expected " << str(opt->type_name())
           << (opt->type_name() == "string" ? " in double quotes" : "") << "\n";
      return false;
    }
    settings_.push_back({name, value, option_source::file});
    return true;
  }

  bool load_file(const std::string& path, bool explicit_path) {
    std::ifstream in{path};
    if (!in) {
      if (!explicit_path)
        return true; // the default file is optional
      err_ << "herald: cannot open config file '" << path << "'\n";
      return false;
    }
    auto parsed = caf::actor_system_config::parse_config(in);
    auto where = "config file " + path;
    if (!parsed) {
      err_ << "herald: " << where << ": " << render(cfg_, parsed.error()) << "\n";
      return false;
    }
    bool ok = true;
    for (const auto& [key, value] : *parsed) {
      if (auto section = caf::get_if<caf::settings>(&value)) {
        for (const auto& [sub, v] : *section) {
          auto name = key + "." + sub;
          if (caf::holds_alternative<caf::settings>(v)) {
            err_ << "herald: unknown section [" << name << "] (" << where << ")\n";
            ok = false;
            continue;
          }
          ok = check_value(name, v, where + ", section [" + key + "]") && ok;
        }
      } else {
        ok = check_value(key, value, where + ", section [global]") && ok;
      }
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
      opt->store(s.value); // bound options: the config member
      caf::put(cfg_.content, s.name, s.value); // CAF reads scheduler.* from here
      sources[s.name] = s.source;
    }
  }

private:
  config& cfg_;
  std::ostream& err_;
  std::vector<setting> settings_;
};

// The option a validate() message is about: its first "--name".
std::string option_in_message(const std::string& msg) {
  auto pos = msg.find("--");
  if (pos == std::string::npos)
    return {};
  auto end = pos + 2;
  while (end < msg.size()
         && (std::isalnum(static_cast<unsigned char>(msg[end])) || msg[end] == '-'
             || msg[end] == '.'))
    ++end;
  return msg.substr(pos + 2, end - pos - 2);
}

std::string source_text(const std::string& name, option_source src, const std::string& file,
                        const environment& env) {
  switch (src) {
    case option_source::defaults: return "the default";
    case option_source::file: return "config file " + file;
    case option_source::cli: return "command line";
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

} // namespace

std::string_view to_string(option_source s) noexcept {
  switch (s) {
    case option_source::defaults: return "default";
    case option_source::file: return "config file";
    case option_source::env: return "environment";
    case option_source::cli: return "command line";
  }
  return "?";
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
    out += (c == '-' || c == '.') ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool is_secret(std::string_view name) {
  std::string lower;
  for (char c : name)
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (auto word : {"secret", "key", "token", "password"})
    if (lower.find(word) != std::string::npos)
      return true;
  return false;
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
  // Every source is checked in full, so one run reports every bad value.
  bool ok = load.load_file(file, explicit_file);
  ok = load.load_env(env) && ok;
  ok = load.load_cli(args) && ok;
  if (!ok) {
    err << "(see herald --help)\n";
    return startup::exit_failure;
  }
  std::map<std::string, option_source> sources;
  load.apply(sources);
  if (explicit_file)
    cfg.config_file_path = file;
  if (auto msg = cfg.validate(); !msg.empty()) {
    auto name = option_in_message(msg);
    auto src = sources.count(name) ? sources[name] : option_source::defaults;
    err << "herald: " << msg << " (from " << source_text(name, src, file, env) << ")\n";
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

std::string dump_config(const config& cfg) {
  auto caf_defaults = cfg.dump_content();
  std::ostringstream out;
  out << "; herald effective configuration (" << build_info() << ")\n";
  std::string section;
  for (auto* o : listed_options(cfg)) {
    const auto& opt = *o;
    auto cat = str(opt.category());
    if (cat != section) {
      out << "\n[" << cat << "]\n";
      section = cat;
    }
    auto name = str(opt.long_name());
    auto full = option_name(opt);
    auto value = value_of(cfg, opt, caf_defaults);
    if (!value) {
      out << "; " << name << "=  (unset: CAF decides)\n";
      continue;
    }
    if (opt.check(*value)) {
      // CAF's built-in default is not writable in the option's type (e.g.
      // max-throughput "unlimited" is SIZE_MAX, shown as -1).
      out << "; " << name << "=" << caf::to_string(*value) << "  (CAF's default)\n";
      continue;
    }
    auto text = caf::to_string(*value);
    if (is_secret(full) && text != "\"\"") {
      out << "; " << name << "=<redacted>\n";
      continue;
    }
    out << name << "=" << redact_url(text) << "\n";
  }
  return out.str();
}

std::string help_text(const config& cfg) {
  auto caf_defaults = cfg.dump_content();
  std::ostringstream out;
  out << "herald: real-time push server (SSE and WebSocket)\n\n"
         "Usage: herald [--option=value ...]     run the server\n"
         "       herald version | --version      print the build info line\n"
         "       herald --dump-config [...]      print the effective configuration (INI)\n"
         "       herald --help                   this text\n\n"
         "Every option is read from, highest precedence first: the command line\n"
         "(--name=value), the environment (HERALD_ + name upper-cased, '-' and '.' as '_';\n"
         "PORT and REDIS_URL are older aliases below HERALD_PORT/HERALD_REDIS_URL), a config\n"
         "file in CAF's INI format (--config-file=PATH, else $HERALD_CONFIG_FILE, else\n"
         "caf-application.ini in the working directory if present; our options under\n"
         "[global], CAF's under [scheduler] etc.; strings in double quotes, atoms in single\n"
         "quotes), then the defaults. A bad value stops start-up naming the option and source.\n"
         "Durations are in seconds unless the name or text says ms; sizes in bytes.\n\n";
  std::string section;
  for (auto* o : listed_options(cfg)) {
    const auto& opt = *o;
    auto cat = str(opt.category());
    if (cat != section) {
      out << "[" << cat << "]\n";
      section = cat;
    }
    auto full = option_name(opt);
    std::string name = "--" + full;
    if (!opt.is_flag())
      name += "=<" + str(opt.type_name()) + ">";
    out << "  " << name;
    if (name.size() < 40)
      out << std::string(40 - name.size(), ' ');
    else
      out << "\n" << std::string(42, ' ');
    out << str(opt.description()) << "\n" << std::string(42, ' ');
    auto value = value_of(cfg, opt, caf_defaults);
    auto text = !value ? std::string{"(CAF decides)"}
                : opt.check(*value) ? "(CAF's: " + caf::to_string(*value) + ")"
                                    : caf::to_string(*value);
    if (is_secret(full) && text != "\"\"")
      text = "<redacted>";
    out << "default " << redact_url(text) << "; env " << env_name(full);
    if (auto a = env_aliases.find(full); a != env_aliases.end())
      out << " or " << a->second;
    out << "\n";
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
