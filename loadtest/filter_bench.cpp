// herald-filter-bench: the cost of one tags filter evaluation
// (net/wire/tags_filter.hpp), the work a filtered subscriber adds to each
// publication on its shard (issue 22, target: at most 100 ns). Built with
// the load tester, never run by ctest (speed is measured here, not by timed
// tests). Prints ns per evaluation and heap allocations per evaluation for
// a few filter shapes, each over the publications below.
//
//   build/bin/herald-filter-bench [iterations]   (default 2,000,000 per case)
#include "loadtest/counting_new.hpp" // counts every heap allocation of this thread
#include "net/wire/tags_filter.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>


namespace {

using herald::net::publication_tags;
using herald::net::tags_filter;

struct sample {
  std::string event;
  publication_tags tags;
};

struct bench_case {
  const char* name;
  herald::net::tags_filter_ptr filter;
};

herald::net::tags_filter_ptr parse(const char* text) {
  std::string error;
  auto f = tags_filter::parse(nlohmann::json::parse(text), error);
  if (!f) {
    std::fprintf(stderr, "bad filter %s: %s\n", text, error.c_str());
    std::exit(2);
  }
  return f;
}

} // namespace

int main(int argc, char** argv) {
  const long iterations = argc > 1 ? std::atol(argv[1]) : 2'000'000;
  if (iterations < 4) {
    std::fprintf(stderr, "usage: herald-filter-bench [iterations >= 4]\n");
    return 2;
  }
  // Publications as a wallet channel carries them: an event and a few tags.
  const std::vector<sample> pubs{
    {"withdrawn", {{"amount", "125.5000000"}, {"asset", "USDC"}, {"memo", "rent-june"}}},
    {"topped_up", {{"amount", "20"}, {"asset", "XLM"}}},
    {"trade", {{"amount", "9999.25"}, {"asset", "EURC"}, {"memo", "otc"}, {"venue", "sdex"}}},
    {"withdrawn", {}},
  };
  const std::vector<bench_case> cases{
    {"sse ?event=withdrawn&event=topped_up", tags_filter::event_in({"withdrawn", "topped_up"})},
    {"eq asset", parse(R"({"key":"asset","cmp":"eq","val":"USDC"})")},
    {"and(in asset, gte amount)",
     parse(R"({"op":"and","nodes":[{"key":"asset","cmp":"in","vals":["USDC","EURC","XLM"]},
                                   {"key":"amount","cmp":"gte","val":"100"}]})")},
    {"or(not(ex memo), and(sw memo, lt amount), event nin)",
     parse(R"({"op":"or","nodes":[
        {"op":"not","nodes":[{"key":"memo","cmp":"ex"}]},
        {"op":"and","nodes":[{"key":"memo","cmp":"sw","val":"rent"},
                             {"key":"amount","cmp":"lt","val":"1000.5"}]},
        {"key":"event","cmp":"nin","vals":["trade","fee"]}]})")},
  };
  std::printf("herald-filter-bench: %ld evaluations per case over %zu publications\n", iterations,
              pubs.size());
  std::printf("%-56s %10s %12s %8s\n", "filter", "ns/eval", "allocs/eval", "matched");
  for (const auto& c : cases) {
    std::size_t matched = 0;
    const auto before = herald::loadtest::thread_allocations();
    const auto start = std::chrono::steady_clock::now();
    const long rounds = iterations / static_cast<long>(pubs.size());
    for (long r = 0; r < rounds; ++r)
      for (const auto& p : pubs) {
        matched += c.filter->matches(p.event, p.tags) ? 1 : 0;
        asm volatile("" : : "r"(matched) : "memory"); // keep every evaluation
      }
    const auto end = std::chrono::steady_clock::now();
    const auto allocs = herald::loadtest::thread_allocations() - before;
    const double evaluations = static_cast<double>(rounds) * static_cast<double>(pubs.size());
    const double ns = std::chrono::duration<double, std::nano>(end - start).count() / evaluations;
    std::printf("%-56s %10.1f %12.3f %7.0f%%\n", c.name, ns,
                static_cast<double>(allocs) / evaluations,
                100.0 * static_cast<double>(matched) / evaluations);
  }
  return 0;
}
