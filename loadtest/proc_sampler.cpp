#include "loadtest/proc_sampler.hpp"

#include "loadtest/clock.hpp"

#include <nlohmann/json.hpp>

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace herald::loadtest {

nlohmann::json proc_sample::to_json() const {
  return {
    {"pid", pid},     {"ok", ok},           {"rss_bytes", rss_bytes},  {"hwm_bytes", hwm_bytes},
    {"cpu_s", cpu_s}, {"threads", threads}, {"open_files", open_files}};
}

proc_sample sample_process(int pid, bool count_files) {
  proc_sample s;
  s.pid = pid;
  s.t_ns = mono_ns();
  std::string base = "/proc/" + std::to_string(pid);
  {
    std::ifstream stat(base + "/stat");
    std::string text;
    if (!std::getline(stat, text))
      return s;
    // comm (field 2) may hold spaces: fields resume after the last ')'.
    auto close = text.rfind(')');
    if (close == std::string::npos)
      return s;
    std::istringstream in(text.substr(close + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    long threads = 0;
    // After ')': state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt
    // majflt cmajflt utime(14) stime(15) cutime cstime priority nice num_threads(20)
    for (int i = 3; i <= 20 && in >> field; ++i) {
      if (i == 14)
        utime = std::stoull(field);
      else if (i == 15)
        stime = std::stoull(field);
      else if (i == 20)
        threads = std::stol(field);
    }
    auto ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
    s.cpu_s = static_cast<double>(utime + stime) / (ticks > 0 ? ticks : 100.0);
    s.threads = static_cast<int>(threads);
  }
  {
    std::ifstream status(base + "/status");
    std::string line;
    while (std::getline(status, line)) {
      auto kb = [&](const char* key) -> std::uint64_t {
        return std::stoull(line.substr(std::char_traits<char>::length(key))) * 1024;
      };
      if (line.rfind("VmRSS:", 0) == 0)
        s.rss_bytes = kb("VmRSS:");
      else if (line.rfind("VmHWM:", 0) == 0)
        s.hwm_bytes = kb("VmHWM:");
    }
  }
  if (count_files) {
    if (DIR* d = opendir((base + "/fd").c_str())) {
      int n = 0;
      while (auto* e = readdir(d))
        if (e->d_name[0] != '.')
          ++n;
      closedir(d);
      s.open_files = n;
    }
  }
  s.ok = true;
  return s;
}

double self_cpu_seconds() noexcept {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto tv = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

} // namespace herald::loadtest
