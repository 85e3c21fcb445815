#define CAF_SUITE actors.channel_cluster
#include "actors/channel_actor.hpp"

#include "fixture.hpp"

using namespace herald;
using namespace herald::actors;
using namespace std::chrono_literals;

namespace {

// Stands in for the Redis gateway: records what the channel asks of it.
struct gw_state {
  std::vector<std::string> watches, unwatches;
  std::vector<std::uint64_t> syncs;                             // the `after` of each sync
  std::vector<std::pair<std::string, std::uint64_t>> positions; // epoch, delivered of each
  std::vector<channel_query_ptr> queries;                       // position queries handed on
};

caf::behavior fake_gateway(caf::stateful_actor<gw_state>* self) {
  return {
    [self](watch_atom, const std::string& ch, const caf::actor&) {
      self->state.watches.push_back(ch);
    },
    [self](unwatch_atom, const std::string& ch) { self->state.unwatches.push_back(ch); },
    [self](history_atom, const channel_query_ptr& q) { self->state.queries.push_back(q); },
    [self](sync_atom, const std::string&, std::uint64_t after, const std::string& epoch,
           std::uint64_t delivered, const caf::actor&) {
      self->state.syncs.push_back(after);
      self->state.positions.emplace_back(epoch, delivered);
    },
  };
}

caf::behavior fake_registry(caf::event_based_actor*) {
  return {[](idle_atom, const std::string&, std::uint64_t) {}};
}

// The channel "stream:7" under test in cluster mode (history of 16 for
// 60 s), with a fake gateway and a fake registry.
struct fixture : test::actor_fixture {
  caf::actor gw = sys.spawn(fake_gateway);
  caf::actor reg = sys.spawn(fake_registry);
  caf::actor ch = spawn_channel("stream:7", "unused", history_options{16, 60s}, reg, gw);

  // As the gateway does, stamp publications with the time they arrive.
  publication_ptr pub(std::string epoch, std::uint64_t offset) {
    return make_publication("stream:7", std::move(epoch), offset, "withdrawn",
                            "{\"o\":" + std::to_string(offset) + "}", sys.clock().now());
  }

  gw_state& gateway() { return deref<caf::stateful_actor<gw_state>>(gw).state; }
  channel_state& state() { return deref<caf::stateful_actor<channel_state>>(ch).state; }

  caf::actor subscribe(std::optional<net::stream_position> since = std::nullopt) {
    auto s = spawn_subscriber();
    self->send(ch, subscribe_atom_v, subscribe_request{"stream:7", s, since, 0, sink_of(s)});
    sched.run();
    return s;
  }

  // The gateway confirms the channel's watch (Redis SUBSCRIBE answered).
  void confirm_watch() {
    self->send(ch, watching_atom_v);
    sched.run();
  }

  void synced(std::string epoch, std::uint64_t head, std::vector<publication_ptr> entries) {
    sync_result r;
    r.ok = true;
    r.epoch = std::move(epoch);
    r.head = head;
    r.entries = std::move(entries);
    self->send(ch, synced_atom_v, std::move(r));
    sched.run();
  }

  void remote(publication_ptr p) {
    self->send(ch, remote_atom_v, std::move(p));
    sched.run();
  }

  std::vector<std::uint64_t> offsets(const caf::actor& s) {
    std::vector<std::uint64_t> out;
    for (auto& p : sub(s).pubs)
      out.push_back(p->offset);
    return out;
  }
};

using offsets_t = std::vector<std::uint64_t>;

} // namespace

CAF_TEST_FIXTURE_SCOPE(channel_cluster_tests, fixture)

CAF_TEST(a position query the channel cannot answer from a mirror goes to the gateway) {
  auto answered = std::make_shared<std::vector<std::pair<net::stream_position, std::size_t>>>();
  auto query = [&](std::size_t limit) {
    auto q = std::make_shared<channel_query>();
    q->channel = "stream:7";
    q->limit = limit;
    q->done = [answered](bool ok, net::stream_position pos, std::vector<publication_ptr> latest) {
      if (ok)
        answered->emplace_back(std::move(pos), latest.size());
    };
    self->send(ch, history_atom_v, q);
    sched.run();
  };
  // No subscriber: nothing mirrored, Redis must answer.
  query(0);
  CAF_REQUIRE_EQUAL(gateway().queries.size(), 1u);
  CAF_CHECK_EQUAL(gateway().queries[0]->limit, 0u);
  CAF_CHECK(answered->empty());
  // Subscribed but not synced yet: still the gateway.
  subscribe();
  query(2);
  CAF_CHECK_EQUAL(gateway().queries.size(), 2u);
  // Synced: the mirror answers, the gateway sees nothing more.
  confirm_watch();
  synced("r1", 3, {pub("r1", 1), pub("r1", 2), pub("r1", 3)});
  query(2);
  CAF_CHECK_EQUAL(gateway().queries.size(), 2u);
  CAF_REQUIRE_EQUAL(answered->size(), 1u);
  CAF_CHECK_EQUAL(answered->at(0).first.epoch, "r1");
  CAF_CHECK_EQUAL(answered->at(0).first.offset, 3u);
  CAF_CHECK_EQUAL(answered->at(0).second, 2u);
}

CAF_TEST(the first subscriber waits for the watch and the sync) {
  auto s = subscribe(net::stream_position{"r1", 1});
  CAF_CHECK_EQUAL(gateway().watches, std::vector<std::string>{"stream:7"});
  CAF_CHECK(sub(s).answers.empty());
  confirm_watch();
  CAF_CHECK_EQUAL(gateway().syncs, offsets_t{0});
  synced("r1", 3, {pub("r1", 1), pub("r1", 2), pub("r1", 3)});
  CAF_REQUIRE_EQUAL(sub(s).answers.size(), 1u);
  const auto& a = sub(s).answers[0];
  CAF_CHECK_EQUAL(a.position.epoch, "r1");
  CAF_CHECK_EQUAL(a.position.offset, 3u);
  CAF_CHECK(a.recovered);
  CAF_REQUIRE_EQUAL(a.replay.size(), 2u);
  CAF_CHECK_EQUAL(a.replay[0]->offset, 2u);
}

CAF_TEST(live publications during the first sync are merged without duplicates) {
  auto s = subscribe();
  confirm_watch();
  remote(pub("r1", 3)); // arrives while the sync is on its way
  remote(pub("r1", 4));
  synced("r1", 3, {pub("r1", 1), pub("r1", 2), pub("r1", 3)});
  CAF_CHECK_EQUAL(state().offset, 4u);
  // Answered at the head (4): the subscriber is live from there.
  CAF_CHECK_EQUAL(sub(s).answers.at(0).position.offset, 4u);
  remote(pub("r1", 5));
  CAF_CHECK_EQUAL(offsets(s), offsets_t{5});
}

CAF_TEST(a gap is filled from the stream before going on) {
  auto s = subscribe();
  confirm_watch();
  synced("r1", 2, {pub("r1", 1), pub("r1", 2)});
  remote(pub("r1", 3));
  remote(pub("r1", 6)); // 4 and 5 were lost on the way
  CAF_CHECK_EQUAL(gateway().syncs, (offsets_t{0, 3}));
  remote(pub("r1", 7)); // held too, while the fill is on its way
  synced("r1", 6, {pub("r1", 4), pub("r1", 5), pub("r1", 6)});
  CAF_CHECK_EQUAL(offsets(s), (offsets_t{3, 4, 5, 6, 7}));
  remote(pub("r1", 7)); // a late duplicate
  CAF_CHECK_EQUAL(offsets(s), (offsets_t{3, 4, 5, 6, 7}));
}

CAF_TEST(a reconfirmed watch syncs again and fills what was missed) {
  auto s = subscribe();
  confirm_watch();
  synced("r1", 1, {pub("r1", 1)});
  // Redis went away and came back: the gateway confirms the watch again.
  confirm_watch();
  CAF_CHECK_EQUAL(gateway().syncs, (offsets_t{0, 1}));
  synced("r1", 3, {pub("r1", 2), pub("r1", 3)});
  CAF_CHECK_EQUAL(offsets(s), (offsets_t{2, 3}));
}

CAF_TEST(a new epoch in Redis is adopted from its start) {
  auto s = subscribe();
  confirm_watch();
  synced("r1", 2, {pub("r1", 1), pub("r1", 2)});
  remote(pub("r2", 1));
  CAF_CHECK_EQUAL(gateway().syncs, (offsets_t{0, 0}));
  synced("r2", 1, {pub("r2", 1)});
  CAF_CHECK_EQUAL(state().epoch, "r2");
  CAF_REQUIRE_EQUAL(sub(s).pubs.size(), 1u);
  CAF_CHECK_EQUAL(sub(s).pubs[0]->epoch, "r2");
  CAF_CHECK_EQUAL(sub(s).pubs[0]->offset, 1u);
}

CAF_TEST(the last subscriber leaving stops the watch) {
  auto s = subscribe();
  confirm_watch();
  synced("r1", 1, {pub("r1", 1)});
  self->send(ch, unsub_atom_v, s);
  sched.run();
  CAF_CHECK_EQUAL(gateway().unwatches, std::vector<std::string>{"stream:7"});
  CAF_CHECK(state().history.empty());
  CAF_CHECK(!state().mirror.watching());
  CAF_CHECK(!state().mirror.ready());
  remote(pub("r1", 2)); // a late one is ignored
  CAF_CHECK(state().history.empty());
}

CAF_TEST(a failed sync is retried until it succeeds) {
  auto s = subscribe();
  confirm_watch();
  sync_result failed;
  failed.ok = false;
  failed.error = "not connected";
  self->send(ch, synced_atom_v, failed);
  sched.run();
  CAF_CHECK(sub(s).answers.empty());
  CAF_CHECK_EQUAL(gateway().syncs.size(), 1u);
  // No new watch confirmation comes (the subscriber connection never
  // dropped): the channel retries by itself.
  advance_time(250ms);
  sched.run();
  CAF_CHECK_EQUAL(gateway().syncs.size(), 2u);
  synced("r1", 0, {});
  CAF_CHECK_EQUAL(sub(s).answers.size(), 1u);
}

CAF_TEST(an offset issued again for another publication makes the channel check its head) {
  auto s = subscribe();
  confirm_watch();
  synced("r1", 3, {pub("r1", 1), pub("r1", 2), pub("r1", 3)});
  CAF_CHECK_EQUAL(gateway().positions.back(), (std::pair<std::string, std::uint64_t>{"", 0}));
  remote(pub("r1", 3)); // a duplicate of what we hold: nothing to check
  CAF_CHECK_EQUAL(gateway().syncs.size(), 1u);
  // Redis was rolled back to offset 1 and issued offset 2 again, for another
  // publication: not silently dropped as a duplicate; the sync carries our
  // position so that Redis moves the channel to a new epoch.
  remote(make_publication("stream:7", "r1", 2, "withdrawn", "{\"other\":1}", sys.clock().now()));
  CAF_REQUIRE_EQUAL(gateway().syncs.size(), 2u);
  CAF_CHECK_EQUAL(gateway().positions.back(), (std::pair<std::string, std::uint64_t>{"r1", 3}));
  synced("r2", 0, {});
  CAF_CHECK_EQUAL(state().epoch, "r1"); // we asked after 3 in r1: read r2 from its start
  CAF_CHECK_EQUAL(gateway().syncs.back(), 0u);
  synced("r2", 0, {});
  CAF_CHECK_EQUAL(state().epoch, "r2");
  CAF_CHECK_EQUAL(state().offset, 0u);
  remote(pub("r2", 1));
  // The subscriber (live from offset 3) gets the new epoch's first; the
  // reissued offset 2 of r1 never reached it.
  CAF_REQUIRE_EQUAL(sub(s).pubs.size(), 1u);
  CAF_CHECK_EQUAL(sub(s).pubs[0]->epoch, "r2");
}

CAF_TEST(a channel that comes back to a known epoch sends what it delivered) {
  auto s = subscribe();
  confirm_watch();
  synced("r1", 5, {});
  self->send(ch, unsub_atom_v, s);
  sched.run();
  auto t = subscribe(net::stream_position{"r1", 5});
  confirm_watch();
  CAF_CHECK_EQUAL(gateway().positions.back(), (std::pair<std::string, std::uint64_t>{"r1", 5}));
  // Redis moved it to a new epoch: the cursor at r1-5 gets the gap.
  synced("r9", 0, {});
  CAF_REQUIRE_EQUAL(sub(t).answers.size(), 1u);
  CAF_CHECK_EQUAL(sub(t).answers[0].reason, "epoch_changed");
}

CAF_TEST(an epoch the channel left coming back from Redis is retired and never reissued) {
  using position = std::pair<std::string, std::uint64_t>;
  auto s = subscribe();
  confirm_watch();
  synced("r1", 0, {});
  for (std::uint64_t o = 1; o <= 5; ++o)
    remote(pub("r1", o));
  // Redis lost the channel; a new epoch began and we moved to it.
  remote(pub("r2", 1));
  synced("r2", 1, {pub("r2", 1)});
  CAF_CHECK_EQUAL(state().epoch, "r2");
  // Redis is restored from an older snapshot: r1 at head 3, below the 5 we
  // delivered, and it issues r1-4 again for another publication.
  remote(make_publication("stream:7", "r1", 4, "withdrawn", "{\"restored\":1}", sys.clock().now()));
  CAF_CHECK_EQUAL(gateway().positions.back(), (position{"r2", 1}));
  synced("r1", 4, {pub("r1", 1), pub("r1", 2), pub("r1", 3), pub("r1", 4)});
  // Not adopted: the sync asks Redis to retire r1 with what we delivered in it.
  CAF_CHECK_EQUAL(state().epoch, "r2");
  CAF_CHECK_EQUAL(gateway().positions.back(), (position{"r1", 5}));
  // Also when Redis's restored head is past what we delivered (published on
  // after the restore): the epoch is retired all the same.
  synced("r1", 9, {});
  CAF_CHECK_EQUAL(gateway().positions.back(), (position{"r1", 10}));
  synced("r3", 0, {});
  synced("r3", 0, {});
  CAF_CHECK_EQUAL(state().epoch, "r3");
  remote(pub("r3", 1));
  // The subscriber saw r1 1-5, r2 1, r3 1: nothing of the restored r1 again.
  std::vector<std::pair<std::string, std::uint64_t>> seen;
  for (auto& p : sub(s).pubs)
    seen.emplace_back(p->epoch, p->offset);
  CAF_CHECK_EQUAL(seen,
                  (std::vector<position>{
                    {"r1", 1}, {"r1", 2}, {"r1", 3}, {"r1", 4}, {"r1", 5}, {"r2", 1}, {"r3", 1}}));
}

CAF_TEST_FIXTURE_SCOPE_END()
