// Command-line checks: loopback only, presets, worker split.
#include "loadtest/options.hpp"
#include "loadtest/worker.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace herald::loadtest;

namespace {
std::string parse(std::vector<const char*> args, options& o) {
  args.insert(args.begin(), "herald-loadtest");
  bool help = false;
  auto err = parse_options(static_cast<int>(args.size()), const_cast<char**>(args.data()), o, help);
  return err.empty() ? finalize_options(o) : err;
}
} // namespace

TEST_CASE("only loopback targets and sources are accepted") {
  for (auto host : {"127.0.0.1", "127.3.4.5", "localhost"})
    CHECK(is_loopback_v4(host));
  for (auto host : {"10.0.0.1", "192.168.1.1", "example.com"})
    CHECK_FALSE(is_loopback_v4(host));
  options a;
  REQUIRE_THAT(parse({"--target", "10.1.2.3:80"}, a), Catch::Contains("loopback"));
  options b;
  REQUIRE_THAT(parse({"--target", "127.0.0.1:80", "--publish-target", "8.8.8.8:80"}, b),
               Catch::Contains("loopback"));
  options c;
  REQUIRE_THAT(parse({"--source-addrs", "127.0.0.1,172.16.0.1"}, c), Catch::Contains("source"));
  options d;
  REQUIRE(parse({"--target=localhost:8080"}, d).empty());
  REQUIRE(d.targets.front() == "127.0.0.1:8080");
  REQUIRE(d.publish_target == "127.0.0.1:8080");
}

TEST_CASE("scenario presets and worker split") {
  options o;
  REQUIRE(parse({"--scenario", "spread", "--connections", "19000"}, o).empty());
  REQUIRE(o.channels == 1900);
  REQUIRE(o.workers == 2); // at most 15,000 connections per process
  REQUIRE(o.publications == 2000);
  options idle;
  REQUIRE(parse({"--scenario=idle", "--publications", "5"}, idle).empty());
  REQUIRE(idle.publications == 0);
  options bad;
  REQUIRE_FALSE(parse({"--scenario", "nope"}, bad).empty());
  options bad2;
  REQUIRE_FALSE(parse({"--rate"}, bad2).empty());
  options bad3;
  REQUIRE_FALSE(parse({"--scenario", "cluster"}, bad3).empty()); // needs two targets
}

TEST_CASE("slow connections are spread evenly") {
  int slow = 0;
  for (std::uint64_t k = 0; k < 10000; ++k)
    slow += is_slow_connection(k, 0.1);
  REQUIRE(slow > 900);
  REQUIRE(slow < 1100);
  REQUIRE_FALSE(is_slow_connection(5, 0));
}

TEST_CASE("--filter reaches the workers as the publisher's event name") {
  options o;
  REQUIRE(parse({"--filter"}, o).empty());
  REQUIRE(o.filter);
  worker_config c;
  c.filter_event = "loadtest";
  REQUIRE(worker_config::from_json(c.to_json()).filter_event == "loadtest");
  REQUIRE(worker_config::from_json(worker_config{}.to_json()).filter_event.empty());
}
