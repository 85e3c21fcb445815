// herald: entry point. Parses the configuration and runs the server.
#include "app/auth_setup.hpp"
#include "app/config.hpp"
#include "app/server.hpp"

#include <caf/init_global_meta_objects.hpp>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>
#include <iostream>

int main(int argc, char** argv) {
  herald::app::config cfg;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::cout << cfg.help();
      return EXIT_SUCCESS;
    }
  }
  if (const char* port = std::getenv("PORT"); port != nullptr && *port != '\0') {
    char* end = nullptr;
    auto v = std::strtoul(port, &end, 10);
    if (*end != '\0' || v > 65535) {
      std::cerr << "herald: environment variable PORT must be a port number, got '" << port
                << "'\n";
      return EXIT_FAILURE;
    }
    cfg.port = static_cast<std::uint16_t>(v);
  }
  if (const char* url = std::getenv("REDIS_URL"); url != nullptr)
    cfg.redis_url = url;
  if (auto err = cfg.parse(argc, argv)) {
    std::cerr << "herald: bad option: " << cfg.render(err) << "\n(see herald --help)\n";
    return EXIT_FAILURE;
  }
  if (cfg.cli_helptext_printed)
    return EXIT_SUCCESS;
  if (auto msg = cfg.validate(); !msg.empty()) {
    std::cerr << "herald: " << msg << "\n";
    return EXIT_FAILURE;
  }
  spdlog::set_level(spdlog::level::from_str(cfg.log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  if (auto msg = herald::app::load_auth(cfg); !msg.empty()) {
    std::cerr << "herald: " << msg << "\n";
    return EXIT_FAILURE;
  }
  return herald::app::run_server(cfg);
}
