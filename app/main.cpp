// herald: entry point. Loads the configuration (app/options.hpp) and runs the server.
#include "app/auth_setup.hpp"
#include "app/config.hpp"
#include "app/logging.hpp"
#include "app/options.hpp"
#include "app/server.hpp"

#include <caf/init_global_meta_objects.hpp>

#include <cstdlib>
#include <iostream>

int main(int argc, char** argv) {
  herald::app::config cfg;
  std::vector<std::string> args(argv + 1, argv + argc);
  switch (
    herald::app::load_config(cfg, args, herald::app::process_environment(), std::cout, std::cerr)) {
  case herald::app::startup::exit_success:
    return EXIT_SUCCESS;
  case herald::app::startup::exit_failure:
    return EXIT_FAILURE;
  case herald::app::startup::run:
    break;
  }
  herald::app::setup_logging(cfg.log_level, cfg.log_format == "json");
  herald::app::setup_client_log(cfg.log_client_rate);
  // load_config() checked the keys and set cfg.auth (app/auth_setup.hpp).
  herald::app::log_auth(cfg);
  return herald::app::run_server(cfg);
}
