// io_shard: the queue through which channels (fan-out, answers) and
// connection actors (control) reach the sessions of one I/O shard.
#include "net/core/io_shard.hpp"

#include <catch2/catch.hpp>

#include <thread>
#include <utility>

using namespace herald::net;

namespace {

// A session stand-in that records what reaches it, in order.
struct recorder : delivery_sink {
  explicit recorder(shard& s)
    : home_(s) {}
  shard& home() noexcept override { return home_; }
  void on_answer(const subscription_answer& a) override { got.push_back("answer " + a.channel); }
  void on_publication(const publication_ptr& p) override {
    got.push_back(p->channel + " " + std::to_string(p->offset));
  }
  shard& home_;
  std::vector<std::string> got;
};

publication_ptr pub(std::string channel, std::uint64_t offset) {
  auto p = std::make_shared<publication>();
  p->channel = std::move(channel);
  p->offset = offset;
  return p;
}

} // namespace

TEST_CASE("io_shard runs fan-outs, answers and tasks in one FIFO", "[io_shard]") {
  asio::io_context ioc{1};
  auto& sh = io_shard::of(ioc);
  auto a = std::make_shared<recorder>(sh);
  auto b = std::make_shared<recorder>(sh);
  auto list = std::make_shared<subscriber_list>(subscriber_list{a, b});
  sh.fanout(pub("stream:1", 1), list);
  subscription_answer answer;
  answer.channel = "stream:2";
  sh.answer(b, std::move(answer));
  sh.post([&] { a->got.push_back("task"); });
  sh.fanout(pub("stream:1", 2), list);
  CHECK(a->got.empty()); // nothing runs before the shard's thread does
  ioc.run();
  CHECK(a->got == std::vector<std::string>{"stream:1 1", "task", "stream:1 2"});
  CHECK(b->got == std::vector<std::string>{"stream:1 1", "answer stream:2", "stream:1 2"});
}

TEST_CASE("io_shard yields to ready handlers after its turn budget, keeping its order",
          "[io_shard]") {
  asio::io_context ioc{1};
  auto& sh = io_shard::of(ioc);
  // A backlog of three turns: one fan-out to 2.5 budgets' worth of sessions,
  // then a task, then a fan-out to one session.
  const std::size_t n = io_shard::turn_budget * 5 / 2;
  std::vector<std::shared_ptr<recorder>> sessions;
  auto big = std::make_shared<subscriber_list>();
  for (std::size_t i = 0; i < n; ++i) {
    sessions.push_back(std::make_shared<recorder>(sh));
    big->push_back(sessions.back());
  }
  std::vector<std::string> order;
  sh.fanout(pub("stream:1", 1), big);
  sh.post([&] { order.push_back("task"); });
  sh.fanout(pub("stream:1", 2),
            std::make_shared<subscriber_list>(subscriber_list{sessions.front()}));
  // A newcomer's handler, ready after the backlog was queued (an accept, a read).
  auto delivered = [&] {
    std::size_t got = 0;
    for (const auto& s : sessions)
      got += s->got.size();
    return got;
  };
  asio::post(ioc, [&] { order.push_back("newcomer after " + std::to_string(delivered())); });
  ioc.run();
  // It ran after one turn of deliveries, not after the whole backlog.
  REQUIRE(order.size() == 2u);
  CHECK(order[0] == "newcomer after " + std::to_string(io_shard::turn_budget));
  CHECK(order[1] == "task");
  // Every session got the first publication once; the first one also the second, after it.
  for (const auto& s : sessions)
    CHECK(s->got.front() == "stream:1 1");
  CHECK(sessions.front()->got == std::vector<std::string>{"stream:1 1", "stream:1 2"});
  CHECK(delivered() == n + 1);
}

TEST_CASE("io_shard takes posts from other threads while its thread runs", "[io_shard]") {
  asio::io_context ioc{1};
  auto& sh = io_shard::of(ioc);
  auto a = std::make_shared<recorder>(sh);
  auto list = std::make_shared<subscriber_list>(subscriber_list{a});
  auto work = asio::make_work_guard(ioc);
  std::thread io{[&] { ioc.run(); }};
  // Two producers (two channels on two actor threads): each one's order is kept.
  auto produce = [&](std::string channel) {
    for (std::uint64_t i = 1; i <= 5000; ++i)
      sh.fanout(pub(channel, i), list);
  };
  std::thread p1{produce, "stream:1"}, p2{produce, "stream:2"};
  p1.join();
  p2.join();
  sh.post([&] { work.reset(); });
  io.join();
  REQUIRE(a->got.size() == 10000u);
  std::uint64_t next1 = 1, next2 = 1;
  for (const auto& line : a->got) {
    auto n = std::stoull(line.substr(9));
    if (line.rfind("stream:1", 0) == 0)
      CHECK(n == next1++);
    else
      CHECK(n == next2++);
  }
}

TEST_CASE("io_shard releases what was not run when the io_context ends", "[io_shard]") {
  std::weak_ptr<recorder> weak;
  {
    asio::io_context ioc{1};
    auto b = std::make_shared<recorder>(io_shard::of(ioc));
    weak = b;
    io_shard::of(ioc).fanout(pub("stream:1", 1),
                             std::make_shared<subscriber_list>(subscriber_list{b}));
    b.reset();
    CHECK_FALSE(weak.expired()); // held by the queued fan-out
  }
  CHECK(weak.expired());
}

TEST_CASE("io_shards spreads connections round robin and runs one thread per shard", "[io_shard]") {
  io_shards shards{3};
  REQUIRE(shards.size() == 3u);
  CHECK(&shards.next() == &shards.context(0));
  CHECK(&shards.next() == &shards.context(1));
  CHECK(&shards.next() == &shards.context(2));
  CHECK(&shards.next() == &shards.context(0));
  CHECK(io_shard::of(shards.context(2)).index() == 2u);
  std::vector<std::thread::id> ids(3);
  std::atomic<int> ran{0};
  // Shard 0 runs on this thread and returns when it has no work: keep it
  // running until every shard ran its task (the server holds such a guard).
  auto guard = asio::make_work_guard(shards.context(0));
  for (std::size_t i = 0; i < 3; ++i)
    io_shard::of(shards.context(i)).post([&, i] {
      ids[i] = std::this_thread::get_id();
      if (++ran == 3)
        shards.stop();
    });
  shards.run();
  CHECK(ran == 3);
  CHECK(ids[0] != ids[1]);
  CHECK(ids[1] != ids[2]);
  CHECK(ids[0] != ids[2]);
}
