#define CAF_SUITE actors.channel_registry
#include "actors/channel_registry.hpp"

#include "fixture.hpp"

using namespace herald;
using namespace herald::actors;
using namespace std::chrono_literals;

namespace {

// The registry under test (history of 8 for 5 s), its channels' epochs
// "e1", "e2", ... in the order they are made.
struct fixture : test::actor_fixture {
  int epochs = 0;
  caf::actor reg =
    spawn_registry(history_options{8, 5s}, [this] { return "e" + std::to_string(++epochs); });
  std::vector<std::vector<std::uint64_t>> replies;

  registry_state& state() { return deref<caf::stateful_actor<registry_state>>(reg).state; }

  void publish(std::vector<std::string> channels) {
    net::http::publish_request req{std::move(channels), "paused", "{}"};
    auto t = std::make_shared<publish_ticket>(
      std::move(req), [this](const publish_ticket& t, const net::publish_outcome& o) {
        if (o.stored())
          replies.push_back(t.offsets);
      });
    self->send(reg, publish_atom_v, std::move(t));
    sched.run();
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(channel_registry_tests, fixture)

CAF_TEST(a publish to several channels gets one offset per channel) {
  publish({"stream:1", "stream:2"});
  publish({"stream:2"});
  CAF_REQUIRE_EQUAL(replies.size(), 2u);
  CAF_CHECK_EQUAL(replies[0], (std::vector<std::uint64_t>{1, 1}));
  CAF_CHECK_EQUAL(replies[1], (std::vector<std::uint64_t>{2}));
  CAF_CHECK_EQUAL(state().channels.size(), 2u);
}

CAF_TEST(subscribe goes to the same channel actor as publish) {
  publish({"stream:1"});
  auto s = spawn_subscriber();
  self->send(reg, subscribe_atom_v, subscribe_request{"stream:1", s, std::nullopt, 0, sink_of(s)});
  sched.run();
  publish({"stream:1"});
  CAF_REQUIRE_EQUAL(sub(s).answers.size(), 1u);
  CAF_CHECK_EQUAL(sub(s).answers[0].position.offset, 1u);
  CAF_CHECK_EQUAL(sub(s).answers[0].position.epoch, "e1");
  CAF_REQUIRE_EQUAL(sub(s).pubs.size(), 1u);
  CAF_CHECK_EQUAL(sub(s).pubs[0]->offset, 2u);
}

CAF_TEST(an idle channel is stopped and comes back with a new epoch) {
  publish({"stream:1"});
  CAF_CHECK_EQUAL(state().channels.size(), 1u);
  advance_time(5s); // history expires; the channel reports idle
  sched.run();
  CAF_CHECK_EQUAL(state().channels.size(), 0u);
  auto s = spawn_subscriber();
  self->send(reg, subscribe_atom_v,
             subscribe_request{"stream:1", s, net::stream_position{"e1", 1}, 0, sink_of(s)});
  sched.run();
  CAF_REQUIRE_EQUAL(sub(s).answers.size(), 1u);
  CAF_CHECK_EQUAL(sub(s).answers[0].position.epoch, "e2");
  CAF_CHECK(!sub(s).answers[0].recovered);
  CAF_CHECK_EQUAL(sub(s).answers[0].reason, "epoch_changed");
}

CAF_TEST(an idle report is ignored while forwarded messages are in flight) {
  publish({"stream:1"});
  auto& e = state().channels.at("stream:1");
  auto ch = e.channel;
  // Pretend a message is still on its way: the channel saw 1, we sent 2.
  ++e.forwarded;
  self->send(reg, idle_atom_v, std::string{"stream:1"}, std::uint64_t{1});
  expect((idle_atom, std::string, std::uint64_t), from(self).to(reg));
  CAF_CHECK_EQUAL(state().channels.size(), 1u);
}

CAF_TEST(a failed channel is forgotten and the registry lives on) {
  publish({"stream:1"});
  auto ch = state().channels.at("stream:1").channel;
  caf::anon_send_exit(ch, caf::exit_reason::unhandled_exception);
  sched.run();
  CAF_CHECK_EQUAL(state().channels.size(), 0u);
  publish({"stream:1"});
  CAF_REQUIRE_EQUAL(replies.size(), 2u);
  CAF_CHECK_EQUAL(replies[1], (std::vector<std::uint64_t>{1}));
}

CAF_TEST(exits of channels never end the registry) {
  publish({"stream:1"});
  auto ch = state().channels.at("stream:1").channel;
  // A channel that ends normally after it was forgotten (the stop race):
  // its exit message must not take the registry down.
  state().channels.clear();
  caf::anon_send_exit(ch, caf::exit_reason::user_shutdown);
  sched.run();
  publish({"stream:2"});
  CAF_REQUIRE_EQUAL(replies.size(), 2u);
  CAF_CHECK_EQUAL(replies[1], (std::vector<std::uint64_t>{1}));
}

CAF_TEST_FIXTURE_SCOPE_END()

// -- channel classes ----------------------------------------------------------

namespace {

// A registry whose user: channels keep 2 publications and answer from cache.
struct class_fixture : test::actor_fixture {
  caf::actor reg = spawn_registry(history_options{8, 5s}, [] { return std::string{"e"}; }, {},
                                  [] {
                                    std::string error;
                                    auto c = net::channel_classes::parse(
                                      "user:* history-size=2 recovery=cache", 8, 5s, error);
                                    CAF_REQUIRE(c.has_value());
                                    return std::make_shared<const net::channel_classes>(*c);
                                  }());

  std::size_t history_of(const std::string& name) {
    auto& st = deref<caf::stateful_actor<registry_state>>(reg).state;
    auto ch = st.channels.at(name).channel;
    return deref<caf::stateful_actor<channel_state>>(ch).state.limits.size;
  }

  void publish(std::string channel, int n) {
    for (int i = 0; i < n; ++i) {
      net::http::publish_request req{{channel}, "paused", "{}"};
      self->send(reg, publish_atom_v,
                 std::make_shared<publish_ticket>(std::move(req),
                                                  [](const publish_ticket&,
                                                     const net::publish_outcome&) {}));
    }
    sched.run();
  }
};

const std::string user = "user:GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ";

} // namespace

CAF_TEST_FIXTURE_SCOPE(channel_class_registry_tests, class_fixture)

CAF_TEST(each channel gets the settings of its class) {
  publish("stream:1", 5);
  publish(user, 5);
  CAF_CHECK_EQUAL(history_of("stream:1"), 8u);
  CAF_CHECK_EQUAL(history_of(user), 2u);
  auto s = spawn_subscriber();
  self->send(reg, subscribe_atom_v, subscribe_request{user, s, std::nullopt, 0, sink_of(s)});
  auto t = spawn_subscriber();
  self->send(reg, subscribe_atom_v,
             subscribe_request{"stream:1", t, std::nullopt, 0, sink_of(t)});
  sched.run();
  CAF_CHECK(sub(s).answers.at(0).cached);
  CAF_REQUIRE_EQUAL(sub(s).answers.at(0).replay.size(), 1u);
  CAF_CHECK_EQUAL(sub(s).answers.at(0).replay[0]->offset, 5u);
  CAF_CHECK(!sub(t).answers.at(0).cached);
  CAF_CHECK(sub(t).answers.at(0).replay.empty());
}

CAF_TEST_FIXTURE_SCOPE_END()
