// herald-loadtest: entry point. The same executable runs as the parent
// (controller) or, with the internal --worker flag, as a worker process
// started by the parent.
#include "loadtest/controller.hpp"
#include "loadtest/options.hpp"
#include "loadtest/worker.hpp"

#include <cstring>
#include <iostream>

int main(int argc, char** argv) {
  using namespace herald::loadtest;
  if (argc >= 2 && std::strcmp(argv[1], "--worker") == 0)
    return run_worker(0, 3);
  options o;
  bool help = false;
  if (auto err = parse_options(argc, argv, o, help); !err.empty()) {
    std::cerr << "herald-loadtest: " << err << "\n(see herald-loadtest --help)\n";
    return 2;
  }
  if (help) {
    std::cout << usage();
    return 0;
  }
  if (auto err = finalize_options(o); !err.empty()) {
    std::cerr << "herald-loadtest: " << err << "\n";
    return 2;
  }
  return run_controller(o);
}
