#define CAF_SUITE actors.channel_actor
#include "actors/channel_actor.hpp"

#include "fixture.hpp"

using namespace herald;
using namespace herald::actors;
using namespace std::chrono_literals;

namespace {

// Records what a subscriber receives.
// Stands in for the registry: records idle reports.
struct reg_state {
  std::vector<std::pair<std::string, std::uint64_t>> idle;
};

caf::behavior fake_registry(caf::stateful_actor<reg_state>* self) {
  return {
    [self](idle_atom, const std::string& name, std::uint64_t ops) {
      self->state.idle.emplace_back(name, ops);
    },
  };
}

publish_ticket_ptr ticket(std::string channel, std::string event, std::vector<std::uint64_t>* out) {
  net::http::publish_request req{{std::move(channel)}, std::move(event), R"({"n":1})"};
  return std::make_shared<publish_ticket>(
    std::move(req), [out](const publish_ticket& t, const net::publish_outcome& o) {
      if (out && o.stored())
        out->push_back(t.offsets[0]);
    });
}

// The channel "stream:42" under test (epoch "ep1", history of 4 for 10 s),
// reporting to a fake registry.
struct fixture : test::actor_fixture {
  caf::actor reg = sys.spawn(fake_registry);
  caf::actor ch = spawn_channel("stream:42", "ep1", history_options{4, 10s}, reg);
  std::vector<std::uint64_t> offsets;

  channel_state& state() { return deref<caf::stateful_actor<channel_state>>(ch).state; }

  void publish(int n) {
    for (int i = 0; i < n; ++i)
      self->send(ch, publish_atom_v, ticket("stream:42", "withdrawn", &offsets), std::size_t{0});
    sched.run();
  }

  caf::actor subscribe(std::optional<net::stream_position> since = std::nullopt) {
    auto s = spawn_subscriber();
    self->send(ch, subscribe_atom_v, subscribe_request{"stream:42", s, since, 0, sink_of(s)});
    sched.run();
    return s;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(channel_actor_tests, fixture)

CAF_TEST(offsets start at one and increase by one per publication) {
  publish(3);
  CAF_REQUIRE_EQUAL(offsets.size(), 3u);
  CAF_CHECK_EQUAL(offsets[0], 1u);
  CAF_CHECK_EQUAL(offsets[1], 2u);
  CAF_CHECK_EQUAL(offsets[2], 3u);
  CAF_CHECK_EQUAL(state().offset, 3u);
}

CAF_TEST(history is bounded by size) {
  publish(6);
  CAF_REQUIRE_EQUAL(state().history.size(), 4u);
  CAF_CHECK_EQUAL(state().history.front()->offset, 3u);
  CAF_CHECK_EQUAL(state().history.back()->offset, 6u);
}

CAF_TEST(history expires after the ttl) {
  publish(2);
  CAF_CHECK_EQUAL(state().history.size(), 2u);
  advance_time(9s);
  sched.run();
  CAF_CHECK_EQUAL(state().history.size(), 2u);
  advance_time(1s);
  sched.run();
  CAF_CHECK_EQUAL(state().history.size(), 0u);
}

CAF_TEST(publications fan out to every subscriber with shared frames) {
  auto a = subscribe();
  auto b = subscribe();
  publish(2);
  CAF_REQUIRE_EQUAL(sub(a).pubs.size(), 2u);
  CAF_REQUIRE_EQUAL(sub(b).pubs.size(), 2u);
  // The same publication object (and frames) reach both subscribers.
  CAF_CHECK(sub(a).pubs[0].get() == sub(b).pubs[0].get());
  CAF_CHECK_EQUAL(sub(a).pubs[1]->offset, 2u);
  CAF_CHECK_EQUAL(*sub(a).pubs[0]->sse, std::string{"event: withdrawn\ndata: {\"n\":1}\n\n"});
  CAF_CHECK_EQUAL(
    *sub(a).pubs[0]->ws,
    std::string{
      R"({"op":"publication","channel":"stream:42","offset":1,"event":"withdrawn","data":{"n":1}})"});
}

CAF_TEST(subscribe without since starts live at the head) {
  publish(2);
  auto a = subscribe();
  CAF_REQUIRE_EQUAL(sub(a).answers.size(), 1u);
  const auto& r = sub(a).answers[0];
  CAF_CHECK_EQUAL(r.position.epoch, "ep1");
  CAF_CHECK_EQUAL(r.position.offset, 2u);
  CAF_CHECK(!r.recovered);
  CAF_CHECK(r.reason.empty());
  CAF_CHECK(r.replay.empty());
}

CAF_TEST(recovery replays exactly the missed publications) {
  publish(4);
  auto a = subscribe(net::stream_position{"ep1", 1});
  const auto& r = sub(a).answers.at(0);
  CAF_CHECK(r.recovered);
  CAF_REQUIRE_EQUAL(r.replay.size(), 3u);
  CAF_CHECK_EQUAL(r.replay[0]->offset, 2u);
  CAF_CHECK_EQUAL(r.replay[2]->offset, 4u);
}

CAF_TEST(recovery at the head replays nothing and succeeds) {
  publish(3);
  auto a = subscribe(net::stream_position{"ep1", 3});
  CAF_CHECK(sub(a).answers.at(0).recovered);
  CAF_CHECK(sub(a).answers.at(0).replay.empty());
}

CAF_TEST(recovery refuses another epoch) {
  publish(3);
  auto a = subscribe(net::stream_position{"other", 1});
  CAF_CHECK(!sub(a).answers.at(0).recovered);
  CAF_CHECK_EQUAL(sub(a).answers.at(0).reason, "epoch_changed");
  CAF_CHECK(sub(a).answers.at(0).replay.empty());
}

CAF_TEST(another epoch with epoch_history replays the current epoch unrecovered) {
  // What a Centrifugo subscribe after a live epoch_changed gap asks for:
  // was an empty replay, so the SDK never got the new epoch's publications.
  publish(6); // history keeps 3..6
  auto s = spawn_subscriber();
  subscribe_request req{"stream:42", s, net::stream_position{"other", 9}, 0, sink_of(s)};
  req.epoch_history = true;
  self->send(ch, subscribe_atom_v, req);
  sched.run();
  const auto& r = sub(s).answers.at(0);
  CAF_CHECK(!r.recovered);
  CAF_CHECK_EQUAL(r.reason, "epoch_changed");
  CAF_REQUIRE_EQUAL(r.replay.size(), 4u);
  CAF_CHECK_EQUAL(r.replay.front()->offset, 3u);
  CAF_CHECK_EQUAL(r.replay.back()->offset, 6u);
  CAF_CHECK_EQUAL(r.position.offset, 6u);
  // The flag changes nothing when the epoch is the channel's.
  auto t = spawn_subscriber();
  subscribe_request same{"stream:42", t, net::stream_position{"ep1", 6}, 0, sink_of(t)};
  same.epoch_history = true;
  self->send(ch, subscribe_atom_v, same);
  sched.run();
  CAF_CHECK(sub(t).answers.at(0).recovered);
  CAF_CHECK(sub(t).answers.at(0).replay.empty());
}

CAF_TEST(recovery refuses an offset in the future) {
  publish(3);
  auto a = subscribe(net::stream_position{"ep1", 4});
  CAF_CHECK(!sub(a).answers.at(0).recovered);
  CAF_CHECK_EQUAL(sub(a).answers.at(0).reason, "offset_in_future");
}

CAF_TEST(recovery refuses when the missed publications left the history by count) {
  publish(8); // history keeps 5..8
  auto a = subscribe(net::stream_position{"ep1", 3});
  CAF_CHECK(!sub(a).answers.at(0).recovered);
  CAF_CHECK_EQUAL(sub(a).answers.at(0).reason, "history_expired");
  auto b = subscribe(net::stream_position{"ep1", 4}); // needs 5..8: all there
  CAF_CHECK(sub(b).answers.at(0).recovered);
  CAF_CHECK_EQUAL(sub(b).answers.at(0).replay.size(), 4u);
}

CAF_TEST(recovery refuses when the missed publications left the history by age) {
  publish(2);
  advance_time(11s);
  auto a = subscribe(net::stream_position{"ep1", 0});
  CAF_CHECK(!sub(a).answers.at(0).recovered);
  CAF_CHECK_EQUAL(sub(a).answers.at(0).reason, "history_expired");
}

CAF_TEST(the answer comes before any live publication) {
  publish(1);
  auto s = spawn_subscriber();
  // Subscribe and publish back to back: the channel handles them in order,
  // so the subscriber sees the answer, then offset 2.
  self->send(ch, subscribe_atom_v,
             subscribe_request{"stream:42", s, net::stream_position{"ep1", 0}, 0, sink_of(s)});
  self->send(ch, publish_atom_v, ticket("stream:42", "withdrawn", &offsets), std::size_t{0});
  sched.run();
  CAF_REQUIRE_EQUAL(sub(s).answers.size(), 1u);
  CAF_CHECK_EQUAL(sub(s).answers[0].replay.size(), 1u);
  CAF_REQUIRE_EQUAL(sub(s).pubs.size(), 1u);
  CAF_CHECK_EQUAL(sub(s).pubs[0]->offset, 2u);
}

CAF_TEST(unsubscribe stops delivery) {
  auto a = subscribe();
  publish(1);
  self->send(ch, unsub_atom_v, a);
  sched.run();
  publish(1);
  CAF_CHECK_EQUAL(sub(a).pubs.size(), 1u);
  CAF_CHECK_EQUAL(state().subscribers.size(), 0u);
}

CAF_TEST(a subscriber that leaves releases its session at once) {
  // The channel's fan-out lists hold the sessions (and so their sockets and
  // connection slots): leaving must not wait for the next publication.
  auto s = spawn_subscriber();
  auto session = std::make_shared<test::recorder>();
  std::weak_ptr<test::recorder> weak = session;
  self->send(ch, subscribe_atom_v, subscribe_request{"stream:42", s, std::nullopt, 0, session});
  session.reset();
  sched.run();
  publish(1); // builds the fan-out lists
  CAF_REQUIRE(!weak.expired());
  CAF_CHECK_EQUAL(weak.lock()->pubs.size(), 1u);
  self->send(ch, unsub_atom_v, s);
  sched.run();
  CAF_CHECK(weak.expired());
}

CAF_TEST(a dead subscriber is dropped) {
  auto a = subscribe();
  auto b = subscribe();
  CAF_CHECK_EQUAL(state().subscribers.size(), 2u);
  caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  sched.run();
  CAF_CHECK_EQUAL(state().subscribers.size(), 1u);
  publish(1);
  CAF_CHECK_EQUAL(sub(b).pubs.size(), 1u);
}

CAF_TEST(an idle channel reports to the registry once history expired) {
  auto a = subscribe();
  publish(1);
  self->send(ch, unsub_atom_v, a);
  sched.run();
  // History still holds offset 1: not idle yet.
  CAF_CHECK(deref<caf::stateful_actor<reg_state>>(reg).state.idle.empty());
  advance_time(10s);
  sched.run();
  auto& idle = deref<caf::stateful_actor<reg_state>>(reg).state.idle;
  CAF_REQUIRE_EQUAL(idle.size(), 1u);
  CAF_CHECK_EQUAL(idle[0].first, "stream:42");
  CAF_CHECK_EQUAL(idle[0].second, 2u); // one subscribe and one publish received
}

CAF_TEST(a channel without publications keeps its epoch for the ttl after its last subscriber left) {
  auto a = subscribe();
  self->send(ch, unsub_atom_v, a);
  sched.run();
  auto& idle = deref<caf::stateful_actor<reg_state>>(reg).state.idle;
  // The subscriber's cursor names this epoch at offset 0: it must resume
  // here, not meet a new epoch, if it comes back soon.
  advance_time(9s);
  sched.run();
  CAF_CHECK(idle.empty());
  advance_time(1s);
  sched.run();
  CAF_REQUIRE_EQUAL(idle.size(), 1u);
}

CAF_TEST(an idempotency key answers a retry with the first offset and delivers nothing) {
  auto a = subscribe();
  auto req = net::http::publish_request{{"stream:42"}, "withdrawn", "{}", "key-1", {}};
  auto retry = [&] {
    auto t = std::make_shared<publish_ticket>(req, nullptr);
    self->send(ch, publish_atom_v, t, std::size_t{0});
    sched.run();
    return t->offsets[0];
  };
  CAF_CHECK_EQUAL(retry(), 1u);
  CAF_CHECK_EQUAL(retry(), 1u);
  publish(1); // offset 2, no key
  CAF_CHECK_EQUAL(retry(), 1u);
  CAF_CHECK_EQUAL(sub(a).pubs.size(), 2u);
}

CAF_TEST_FIXTURE_SCOPE_END()

// -- versioned publishing ------------------------------------------------------

namespace {

struct version_fixture : fixture {
  std::vector<std::string> results; ///< "offset" or "offset suppressed:<reason>"

  void publish_version(std::uint64_t version, std::string version_epoch = {}) {
    net::http::publish_request req{{"stream:42"}, "balance", R"({"n":1})"};
    req.version = version;
    req.version_epoch = std::move(version_epoch);
    self->send(ch, publish_atom_v,
               std::make_shared<publish_ticket>(
                 std::move(req),
                 [this](const publish_ticket& t, const net::publish_outcome& o) {
                   auto r = std::to_string(o.positions.at(0).offset);
                   if (!o.suppressed.empty())
                     r += " suppressed:" + o.suppressed.at(0);
                   results.push_back(r);
                   CAF_CHECK(o.stored());
                   CAF_CHECK_EQUAL(o.positions.at(0).epoch, "ep1");
                   (void)t;
                 }),
               std::size_t{0});
    sched.run();
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(version_tests, version_fixture)

CAF_TEST(a version not above the last is suppressed and neither stored nor delivered at an unchanged offset) {
  auto a = subscribe();
  publish_version(10);
  publish_version(10);
  publish_version(9);
  publish_version(11);
  publish_version(0); // no version: not guarded, and the last version stays 11
  publish_version(11);
  CAF_CHECK_EQUAL(results, (std::vector<std::string>{"1", "1 suppressed:stale_version",
                                                     "1 suppressed:stale_version", "2", "3",
                                                     "3 suppressed:stale_version"}));
  CAF_CHECK_EQUAL(sub(a).pubs.size(), 3u);
  CAF_CHECK_EQUAL(state().history.size(), 3u);
}

CAF_TEST(a version epoch starts its own count) {
  publish_version(100, "run-1");
  publish_version(5, "run-2");
  publish_version(5, "run-2");
  publish_version(101, "run-1"); // the last accepted epoch is run-2: another epoch counts anew
  CAF_CHECK_EQUAL(results,
                  (std::vector<std::string>{"1", "2", "2 suppressed:stale_version", "3"}));
}

CAF_TEST_FIXTURE_SCOPE_END()

// -- channel classes (net/wire/channel_class.hpp) ------------------------------

namespace {

// "stream:7" in a class with recovery=cache, overflow=conflate, delta=refused
// and a history of 2.
struct cache_fixture : fixture {
  caf::actor cached = spawn_channel("stream:7", "ep7", history_options{2, 10s}, reg, {}, [] {
    net::channel_class c;
    c.recovery = net::recovery_mode::cache;
    c.overflow = net::overflow_policy::conflate;
    c.delta = false;
    return c;
  }());

  void publish_cached(int n, const std::string& event = "withdrawn") {
    for (int i = 0; i < n; ++i)
      self->send(cached, publish_atom_v, ticket("stream:7", event, nullptr), std::size_t{0});
    sched.run();
  }

  const subscribe_result& answer(std::optional<net::stream_position> since, bool delta = false,
                                 net::tags_filter_ptr filter = nullptr) {
    auto s = spawn_subscriber();
    subscribe_request req{"stream:7", s, since, 0, sink_of(s)};
    req.delta = delta;
    req.filter = std::move(filter);
    self->send(cached, subscribe_atom_v, req);
    sched.run();
    return sub(s).answers.at(0);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(channel_class_tests, cache_fixture)

CAF_TEST(cache recovery gives a subscriber without a position the latest publication) {
  publish_cached(5);
  const auto& r = answer(std::nullopt);
  CAF_CHECK(r.cached);
  CAF_CHECK(!r.recovered);
  CAF_REQUIRE_EQUAL(r.replay.size(), 1u);
  CAF_CHECK_EQUAL(r.replay[0]->offset, 5u);
  CAF_CHECK_EQUAL(r.position.offset, 5u);
}

CAF_TEST(cache recovery stands in for every recovery that cannot be exact) {
  publish_cached(5); // history keeps 4..5
  for (auto since : {net::stream_position{"ep7", 1}, net::stream_position{"other", 9},
                     net::stream_position{"ep7", 9}, net::stream_position{"", 0}}) {
    const auto& r = answer(since);
    CAF_CHECK(r.cached);
    CAF_CHECK(r.recovered);
    CAF_CHECK(r.reason.empty());
    CAF_REQUIRE_EQUAL(r.replay.size(), 1u);
    CAF_CHECK_EQUAL(r.replay[0]->offset, 5u);
  }
}

CAF_TEST(cache recovery with a filter gives the newest publication it matches) {
  publish_cached(1, "topped_up");
  publish_cached(1, "withdrawn"); // history keeps 1..2: topped_up, withdrawn
  for (auto since : {std::optional<net::stream_position>{},
                     std::optional<net::stream_position>{net::stream_position{"other", 9}}}) {
    // The replay runs from the newest match to the head: the session's filter
    // drops the later ones, and its position reaches the head (no gap).
    const auto& r = answer(since, false, net::tags_filter::event_in({"topped_up"}));
    CAF_CHECK(r.cached);
    CAF_CHECK_EQUAL(r.recovered, since.has_value());
    CAF_REQUIRE_EQUAL(r.replay.size(), 2u);
    CAF_CHECK_EQUAL(r.replay[0]->offset, 1u);
    CAF_CHECK_EQUAL(r.replay[0]->event, "topped_up");
    CAF_CHECK_EQUAL(r.position.offset, 2u);
  }
  // The latest matches: the latest alone, as without a filter.
  const auto& latest = answer(std::nullopt, false, net::tags_filter::event_in({"withdrawn"}));
  CAF_REQUIRE_EQUAL(latest.replay.size(), 1u);
  CAF_CHECK_EQUAL(latest.replay[0]->offset, 2u);
  // None matches: no publication, still cached (live from the head).
  const auto& none = answer(std::nullopt, false, net::tags_filter::event_in({"paused"}));
  CAF_CHECK(none.cached);
  CAF_CHECK(none.replay.empty());
  CAF_CHECK_EQUAL(none.position.offset, 2u);
  // An exact recovery is not the cache's: its filtering stays the session's.
  const auto& exact =
    answer(net::stream_position{"ep7", 1}, false, net::tags_filter::event_in({"paused"}));
  CAF_CHECK(!exact.cached);
  CAF_CHECK_EQUAL(exact.replay.size(), 1u);
}

CAF_TEST(cache recovery keeps an exact recovery exact) {
  publish_cached(5);
  const auto& r = answer(net::stream_position{"ep7", 3});
  CAF_CHECK(!r.cached);
  CAF_CHECK(r.recovered);
  CAF_REQUIRE_EQUAL(r.replay.size(), 2u);
  CAF_CHECK_EQUAL(r.replay[0]->offset, 4u);
  const auto& head = answer(net::stream_position{"ep7", 5});
  CAF_CHECK(!head.cached);
  CAF_CHECK(head.recovered);
  CAF_CHECK(head.replay.empty());
}

CAF_TEST(cache recovery without a publication answers as a stream channel) {
  const auto& none = answer(std::nullopt);
  CAF_CHECK(!none.cached);
  CAF_CHECK(none.replay.empty());
  const auto& gone = answer(net::stream_position{"other", 3});
  CAF_CHECK(!gone.cached);
  CAF_CHECK(!gone.recovered);
  CAF_CHECK_EQUAL(gone.reason, "epoch_changed");
}

CAF_TEST(the answer carries the class overflow policy and refuses deltas) {
  publish_cached(3);
  const auto& r = answer(std::nullopt, true);
  CAF_CHECK(r.overflow == net::overflow_policy::conflate);
  CAF_CHECK(!r.delta_allowed);
  // No delta is made for a class that refuses them.
  publish_cached(2);
  auto& st = deref<caf::stateful_actor<channel_state>>(cached).state;
  CAF_CHECK(!st.deltas);
  CAF_CHECK(st.history.back()->delta.empty());
}

CAF_TEST(a channel of the default class answers with the close policy and allows deltas) {
  publish(1);
  auto a = subscribe();
  CAF_CHECK(sub(a).answers.at(0).overflow == net::overflow_policy::close);
  CAF_CHECK(sub(a).answers.at(0).delta_allowed);
  CAF_CHECK(!sub(a).answers.at(0).cached);
}

CAF_TEST_FIXTURE_SCOPE_END()

// -- deltas with a history of one (issue 39) -----------------------------------

namespace {

// "stream:8" in the recommended cache class: history-size=1, recovery=cache.
struct one_fixture : fixture {
  caf::actor one = spawn_channel("stream:8", "ep8", history_options{1, 10s}, reg, {}, [] {
    net::channel_class c;
    c.recovery = net::recovery_mode::cache;
    return c;
  }());

  void publish_one(int n) {
    const std::string big(400, 'x');
    for (int i = 0; i < n; ++i) {
      net::http::publish_request req{{"stream:8"},
                                     "balance",
                                     R"({"n":)" + std::to_string(i) + R"(,"pad":")" + big + "\"}"};
      self->send(one, publish_atom_v, std::make_shared<publish_ticket>(std::move(req), nullptr),
                 std::size_t{0});
    }
    sched.run();
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(delta_history_one_tests, one_fixture)

CAF_TEST(a history of one still gives each publication a delta against the one before) {
  // Was: the subscribe answered "delta":true, but no publication got a delta
  // (the base was looked up in the history, which keeps only the newest).
  publish_one(1);
  auto s = spawn_subscriber();
  subscribe_request req{"stream:8", s, std::nullopt, 0, sink_of(s)};
  req.delta = true;
  self->send(one, subscribe_atom_v, req);
  sched.run();
  CAF_CHECK(sub(s).answers.at(0).delta_allowed);
  publish_one(2);
  auto& st = deref<caf::stateful_actor<channel_state>>(one).state;
  CAF_REQUIRE_EQUAL(st.history.size(), 1u);
  CAF_CHECK_EQUAL(st.history.back()->offset, 3u);
  CAF_CHECK(!st.history.back()->delta.empty());
  CAF_CHECK(st.history.back()->delta.size() < st.history.back()->data.size());
}

CAF_TEST_FIXTURE_SCOPE_END()
