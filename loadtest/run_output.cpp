#include "loadtest/run_output.hpp"

#include "loadtest/svg_plot.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>

namespace herald::loadtest {

void write_outputs(const options& o, const run_result& r, const timeline_recorder& timeline) {
  // Both plots' titles start with what ran.
  const std::string title = "herald-loadtest " + r.scenario + " " + r.transport + ", " +
                            std::to_string(r.connections) + " connections";
  auto j = to_json(r);
  if (o.json)
    std::cout << j.dump(2) << std::endl;
  else
    print_table(std::cout, r);
  if (!o.json_file.empty()) {
    std::ofstream f(o.json_file);
    f << j.dump(2) << "\n";
    if (!f)
      std::cerr << "herald-loadtest: cannot write " << o.json_file << "\n";
  }
  if (!o.svg_file.empty()) {
    std::vector<plot_series> series;
    if (o.find_max) {
      for (const auto& s : r.steps)
        series.emplace_back(std::to_string(static_cast<long>(s.target_rate)) + " publications/s",
                            &s.latency);
    } else {
      series.emplace_back(std::to_string(static_cast<long>(r.rate)) + " publications/s",
                          &r.latency);
    }
    bool any = std::any_of(series.begin(), series.end(),
                           [](const plot_series& s) { return s.second->count() > 0; });
    if (!any)
      std::cerr << "herald-loadtest: no latency to plot (nothing delivered): " << o.svg_file
                << " not written\n";
    else if (!write_percentile_svg(o.svg_file, title, series))
      std::cerr << "herald-loadtest: cannot write " << o.svg_file << "\n";
  }
  if (!o.throughput_svg_file.empty()) {
    if (!timeline.write_svg(o.throughput_svg_file, title + ": throughput"))
      std::cerr << "herald-loadtest: cannot write " << o.throughput_svg_file << "\n";
  }
}

} // namespace herald::loadtest
