// delivery_service: batched hand-over of frames from other threads to the
// (single) I/O thread, in order per target.
#include "net/delivery_service.hpp"

#include <catch2/catch.hpp>

#include <future>
#include <thread>

using namespace herald::net;

namespace {

struct recorder : delivery_target {
  std::vector<std::string> got; // prefix + body, in arrival order
  void on_batched_delivery(std::string prefix, frame body, std::int64_t) override {
    got.push_back(prefix + *body);
  }
};

} // namespace

TEST_CASE("delivery_service is off until enabled", "[delivery_service]") {
  asio::io_context ioc{1};
  auto& svc = asio::use_service<delivery_service>(ioc);
  CHECK_FALSE(svc.enabled());
  svc.enable(ioc);
  CHECK(svc.enabled());
}

TEST_CASE("delivery_service delivers in order, in one batch per wake-up", "[delivery_service]") {
  asio::io_context ioc{1};
  auto& svc = asio::use_service<delivery_service>(ioc);
  svc.enable(ioc);
  auto a = std::make_shared<recorder>();
  auto b = std::make_shared<recorder>();
  for (int i = 0; i < 1000; ++i) {
    svc.post(a, "a", make_frame(std::to_string(i)), 0);
    svc.post(b, "", make_frame(std::to_string(i)), 0);
  }
  // One wake-up handler for the whole batch.
  CHECK(ioc.poll_one() == 1);
  CHECK(ioc.poll() == 0);
  REQUIRE(a->got.size() == 1000);
  REQUIRE(b->got.size() == 1000);
  for (int i = 0; i < 1000; ++i) {
    CHECK(a->got[i] == "a" + std::to_string(i));
    CHECK(b->got[i] == std::to_string(i));
  }
}

TEST_CASE("delivery_service takes posts from other threads while the I/O thread runs",
          "[delivery_service]") {
  asio::io_context ioc{1};
  auto& svc = asio::use_service<delivery_service>(ioc);
  svc.enable(ioc);
  auto work = asio::make_work_guard(ioc);
  std::thread io{[&] { ioc.run(); }};
  constexpr int n = 20000;
  std::vector<std::shared_ptr<recorder>> targets;
  for (int t = 0; t < 2; ++t)
    targets.push_back(std::make_shared<recorder>());
  std::vector<std::thread> producers;
  for (int t = 0; t < 2; ++t)
    producers.emplace_back([&, t] {
      for (int i = 0; i < n; ++i)
        svc.post(targets[t], "", make_frame(std::to_string(i)), 0);
    });
  for (auto& p : producers)
    p.join();
  // Everything posted is drained: a final marker runs after the last batch.
  std::promise<void> done;
  asio::post(ioc, [&] { svc.post(targets[0], "", make_frame("end"), 0); });
  asio::post(ioc, [&] { asio::post(ioc, [&] { done.set_value(); }); });
  done.get_future().wait();
  work.reset();
  ioc.stop();
  io.join();
  for (int t = 0; t < 2; ++t) {
    auto& got = targets[t]->got;
    REQUIRE(got.size() >= static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i)
      CHECK(got[i] == std::to_string(i));
  }
}

TEST_CASE("delivery_service releases undelivered targets when the io_context ends",
          "[delivery_service]") {
  auto target = std::make_shared<recorder>();
  {
    asio::io_context ioc{1};
    auto& svc = asio::use_service<delivery_service>(ioc);
    svc.enable(ioc);
    svc.post(target, "", make_frame("never run"), 0);
    CHECK(target.use_count() == 2);
  }
  CHECK(target.use_count() == 1);
  CHECK(target->got.empty());
}
