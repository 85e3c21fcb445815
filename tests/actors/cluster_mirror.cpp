#define CAF_SUITE actors.cluster_mirror
// The cluster mirror and the channel log as plain values: no actor system,
// no scheduler. What the channel actor does with the mirror's steps is
// covered by actors.channel_cluster; the same behaviour end to end by the
// e2e.cluster suites against real Redis and real server processes.
#include "actors/cluster_mirror.hpp"

#include <caf/test/unit_test.hpp>

using namespace herald;
using namespace herald::actors;
using namespace std::chrono_literals;

namespace {

using offsets_t = std::vector<std::uint64_t>;

const caf::actor_clock::time_point t0{};

publication_ptr pub(std::string epoch, std::uint64_t offset, std::string data = {}) {
  if (data.empty())
    data = "{\"o\":" + std::to_string(offset) + "}";
  return make_publication("stream:7", std::move(epoch), offset, "withdrawn", std::move(data), t0);
}

sync_result ok(std::string epoch, std::uint64_t head, std::vector<publication_ptr> entries = {}) {
  sync_result r;
  r.ok = true;
  r.epoch = std::move(epoch);
  r.head = head;
  r.entries = std::move(entries);
  return r;
}

offsets_t offsets(const std::vector<publication_ptr>& ps) {
  offsets_t out;
  for (const auto& p : ps)
    out.push_back(p->offset);
  return out;
}

offsets_t offsets(const std::deque<publication_ptr>& ps) {
  return offsets(std::vector<publication_ptr>(ps.begin(), ps.end()));
}

// A mirror of "stream:7" (history of 16) that watches, with its first sync asked.
struct fixture {
  channel_log log;
  cluster_mirror m;
  std::optional<sync_request> first;

  fixture() {
    log.limits = history_options{16, 60s};
    CAF_REQUIRE(m.watch());
    first = m.on_watching(log);
  }

  // Answers the sync on its way and returns the step.
  cluster_mirror::step synced(std::string epoch, std::uint64_t head,
                              std::vector<publication_ptr> entries = {}) {
    auto r = ok(std::move(epoch), head, std::move(entries));
    return m.on_synced(r, log);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(cluster_mirror_tests, fixture)

CAF_TEST(the first watch asks for a sync from the start and is ready once it answers) {
  CAF_CHECK(!m.watch()); // watching already: nothing more to ask the gateway
  CAF_REQUIRE(first);
  CAF_CHECK_EQUAL(first->after, 0u);
  CAF_CHECK_EQUAL(first->epoch, "");
  CAF_CHECK(!m.ready());
  CAF_CHECK(!m.on_watching(log)); // one sync at a time
  auto step = synced("r1", 2, {pub("r1", 1), pub("r1", 2)});
  CAF_CHECK(step.became_ready);
  CAF_CHECK_EQUAL(offsets(step.applied), offsets_t({1, 2}));
  CAF_CHECK_EQUAL(offsets(log.history), offsets_t({1, 2}));
  CAF_CHECK_EQUAL(log.epoch, "r1");
  // A watch confirmed while one sync was on its way brings another one after.
  CAF_REQUIRE(step.sync);
  CAF_CHECK_EQUAL(step.sync->after, 2u);
  CAF_CHECK(!m.ready());
  step = synced("r1", 2);
  CAF_CHECK(step.applied.empty());
  CAF_CHECK(!step.sync);
  CAF_CHECK(m.ready());
}

CAF_TEST(live publications during a sync are held and merged without duplicates) {
  CAF_CHECK(m.on_remote(pub("r1", 3), log).applied.empty());
  CAF_CHECK(m.on_remote(pub("r1", 4), log).applied.empty());
  CAF_CHECK_EQUAL(m.held(), 2u);
  auto step = synced("r1", 3, {pub("r1", 1), pub("r1", 2), pub("r1", 3)});
  CAF_CHECK_EQUAL(offsets(step.applied), offsets_t({1, 2, 3, 4}));
  CAF_CHECK_EQUAL(m.held(), 0u);
  CAF_CHECK_EQUAL(log.offset, 4u);
}

CAF_TEST(the next live publication is applied at once and an old one is ignored) {
  synced("r1", 1, {pub("r1", 1)});
  auto step = m.on_remote(pub("r1", 2), log);
  CAF_CHECK_EQUAL(offsets(step.applied), offsets_t({2}));
  CAF_CHECK(!step.sync);
  step = m.on_remote(pub("r1", 2), log); // the same one again (a sync read it too)
  CAF_CHECK(step.applied.empty());
  CAF_CHECK(!step.sync);
  CAF_CHECK_EQUAL(offsets(log.history), offsets_t({1, 2}));
}

CAF_TEST(a gap is held and filled from the stream) {
  synced("r1", 1, {pub("r1", 1)});
  auto step = m.on_remote(pub("r1", 4), log);
  CAF_CHECK(step.applied.empty());
  CAF_REQUIRE(step.sync);
  CAF_CHECK_EQUAL(step.sync->after, 1u);
  CAF_CHECK_EQUAL(step.sync->epoch, "r1");
  CAF_CHECK_EQUAL(step.sync->delivered, 1u);
  step = synced("r1", 4, {pub("r1", 2), pub("r1", 3), pub("r1", 4)});
  CAF_CHECK_EQUAL(offsets(step.applied), offsets_t({2, 3, 4}));
}

CAF_TEST(entries trimmed away in Redis leave a jump the subscribers see as a gap) {
  auto step = synced("r1", 9, {pub("r1", 8), pub("r1", 9)});
  CAF_CHECK_EQUAL(offsets(step.applied), offsets_t({8, 9}));
  step = m.on_remote(pub("r1", 10), log);
  CAF_CHECK_EQUAL(offsets(step.applied), offsets_t({10}));
  synced("r1", 10); // nothing asked; a later sync...
  auto r = ok("r1", 12);
  CAF_REQUIRE(m.on_remote(pub("r1", 13), log).sync); // gap: sync after 10
  step = m.on_synced(r, log);                        // ...finds 11 and 12 trimmed
  CAF_CHECK_EQUAL(offsets(step.applied), offsets_t({13}));
  CAF_CHECK_EQUAL(log.offset, 13u);
}

CAF_TEST(a new epoch met on the first sync is adopted and the old one retired) {
  log.epoch = "r0";
  log.offset = 5; // what the channel had before it stopped watching
  auto step = synced("r1", 2, {pub("r1", 1), pub("r1", 2)});
  CAF_CHECK(step.became_ready);
  CAF_CHECK_EQUAL(log.epoch, "r1");
  CAF_CHECK_EQUAL(offsets(log.history), offsets_t({1, 2}));
  CAF_REQUIRE_EQUAL(m.retired().size(), 1u);
  CAF_CHECK_EQUAL(m.retired()[0].first, "r0");
  CAF_CHECK_EQUAL(m.retired()[0].second, 5u);
}

CAF_TEST(a new epoch met after an offset is read again from its start) {
  synced("r1", 3, {pub("r1", 1), pub("r1", 2), pub("r1", 3)});
  auto step = m.on_remote(pub("r2", 1), log); // Redis lost the channel: a new epoch
  CAF_REQUIRE(step.sync);
  CAF_CHECK_EQUAL(step.sync->after, 0u); // not synced any more: from the start
  CAF_CHECK_EQUAL(m.held(), 1u);
  step = synced("r2", 1, {pub("r2", 1)});
  CAF_CHECK_EQUAL(log.epoch, "r2");
  CAF_CHECK_EQUAL(offsets(step.applied), offsets_t({1}));
  CAF_CHECK_EQUAL(m.held(), 0u);
}

CAF_TEST(a sync after an offset that meets another epoch asks again from the start) {
  synced("r1", 3, {pub("r1", 1), pub("r1", 2), pub("r1", 3)});
  CAF_REQUIRE(m.on_remote(pub("r1", 5), log).sync); // gap: after 3
  auto step = synced("r2", 1, {pub("r2", 1)});        // the stream is another epoch now
  CAF_CHECK(step.applied.empty());
  CAF_CHECK(!step.became_ready);
  CAF_REQUIRE(step.sync);
  CAF_CHECK_EQUAL(step.sync->after, 0u);
  CAF_CHECK_EQUAL(log.epoch, "r1");
  step = synced("r2", 1, {pub("r2", 1)});
  CAF_CHECK_EQUAL(log.epoch, "r2");
  CAF_CHECK_EQUAL(log.offset, 1u);
}

CAF_TEST(an epoch the channel left coming back is retired with what was delivered) {
  synced("r1", 3, {pub("r1", 1), pub("r1", 2), pub("r1", 3)});
  m.on_remote(pub("r2", 1), log);
  synced("r2", 1, {pub("r2", 1)}); // left r1 at 3
  // Redis restored an older snapshot: r1 at head 2.
  CAF_REQUIRE(m.on_remote(pub("r1", 3, "{\"other\":1}"), log).sync);
  auto step = synced("r1", 2, {pub("r1", 1), pub("r1", 2)});
  CAF_CHECK_EQUAL(step.restored_epoch, "r1");
  CAF_CHECK(step.applied.empty());
  CAF_REQUIRE(step.sync);
  CAF_CHECK_EQUAL(step.sync->epoch, "r1");      // the epoch to retire...
  CAF_CHECK_EQUAL(step.sync->delivered, 3u);    // ...above its head
  CAF_CHECK_EQUAL(log.epoch, "r2");
  // The script moved the channel to r3: adopted.
  step = synced("r3", 0);
  CAF_CHECK(step.became_ready);
  CAF_CHECK_EQUAL(log.epoch, "r3");
  // The next sync sends the log's own position again.
  m.on_remote(pub("r3", 2), log);
  CAF_CHECK_EQUAL(m.held(), 1u);
}

CAF_TEST(an offset issued again for another publication asks for a sync) {
  synced("r1", 2, {pub("r1", 1), pub("r1", 2)});
  auto step = m.on_remote(pub("r1", 2, "{\"other\":1}"), log);
  CAF_CHECK(step.applied.empty());
  CAF_REQUIRE(step.sync);
  CAF_CHECK_EQUAL(step.sync->delivered, 2u);
}

CAF_TEST(a failed sync asks to retry later and keeps what is held) {
  m.on_remote(pub("r1", 1), log);
  sync_result failed;
  failed.error = "connection lost";
  auto step = m.on_synced(failed, log);
  CAF_CHECK(step.retry_later);
  CAF_CHECK_EQUAL(step.error, "connection lost");
  CAF_CHECK(!step.became_ready);
  CAF_CHECK_EQUAL(m.held(), 1u);
  auto again = m.on_watching(log);
  CAF_REQUIRE(again);
  CAF_CHECK_EQUAL(again->after, 0u);
  step = synced("r1", 1, {pub("r1", 1)});
  CAF_CHECK(step.became_ready);
  CAF_CHECK_EQUAL(offsets(step.applied), offsets_t({1}));
}

CAF_TEST(unwatch forgets history and held publications but keeps the position) {
  synced("r1", 2, {pub("r1", 1), pub("r1", 2)});
  m.on_remote(pub("r1", 4), log); // held, a sync on its way
  CAF_CHECK(m.unwatch(log));
  CAF_CHECK(!m.unwatch(log));
  CAF_CHECK(log.history.empty());
  CAF_CHECK_EQUAL(m.held(), 0u);
  CAF_CHECK(!m.ready());
  CAF_CHECK(m.on_remote(pub("r1", 5), log).applied.empty()); // ignored
  CAF_CHECK_EQUAL(m.held(), 0u);
  auto late = ok("r1", 4, {pub("r1", 3), pub("r1", 4)});
  CAF_CHECK(m.on_synced(late, log).applied.empty()); // the late answer too
  // Watched again: the sync sends where the channel was.
  CAF_CHECK(m.watch());
  auto r = m.on_watching(log);
  CAF_REQUIRE(r);
  CAF_CHECK_EQUAL(r->after, 0u);
  CAF_CHECK_EQUAL(r->epoch, "r1");
  CAF_CHECK_EQUAL(r->delivered, 2u);
}

CAF_TEST(at most sixteen retired epochs are remembered) {
  for (int i = 1; i <= 20; ++i) {
    auto e = "e" + std::to_string(i);
    CAF_REQUIRE(m.on_remote(pub(e, 1), log).sync || i == 1);
    synced(e, 1, {pub(e, 1)});
  }
  CAF_CHECK_EQUAL(m.retired().size(), cluster_mirror::max_retired_epochs);
  CAF_CHECK_EQUAL(m.retired().back().first, "e19");
  CAF_CHECK_EQUAL(m.retired().front().first, "e4");
}

CAF_TEST_FIXTURE_SCOPE_END()

CAF_TEST(the log keeps contiguous offsets bounded by count and age) {
  channel_log log;
  log.limits = history_options{3, 10s};
  log.epoch = "e";
  for (std::uint64_t o = 1; o <= 5; ++o)
    log.append(make_publication("c", "e", o, "x", "{}", t0 + std::chrono::seconds(o)));
  CAF_CHECK_EQUAL(log.offset, 5u);
  CAF_CHECK_EQUAL(offsets(log.history), offsets_t({3, 4, 5}));
  log.expire(t0 + 14s); // 3 and 4 are 10 s old or more
  CAF_CHECK_EQUAL(offsets(log.history), offsets_t({5}));
  CAF_CHECK(log.holds(*make_publication("c", "e", 5, "x", "{}", t0)));
  CAF_CHECK(!log.holds(*make_publication("c", "e", 5, "x", "{\"y\":1}", t0)));
  CAF_CHECK(!log.holds(*make_publication("c", "e", 4, "x", "{}", t0)));
  auto r = log.decide(net::stream_position{"e", 4});
  CAF_CHECK(r.recovered);
  CAF_CHECK_EQUAL(offsets(r.replay), offsets_t({5}));
  CAF_CHECK_EQUAL(log.decide(net::stream_position{"e", 2}).reason, "history_expired");
  CAF_CHECK_EQUAL(log.decide(net::stream_position{"e", 6}).reason, "offset_in_future");
  CAF_CHECK_EQUAL(log.decide(net::stream_position{"f", 5}).reason, "epoch_changed");
  log.restart("f");
  CAF_CHECK_EQUAL(log.offset, 0u);
  CAF_CHECK(log.history.empty());
  CAF_CHECK(log.decide(net::stream_position{"f", 0}).recovered);
}
