// actor_fixture: the CAF test fixture every actor suite derives its own
// from. Include it after defining CAF_SUITE, and after every other header:
// caf/test/dsl.hpp defines macros with common names (expect, allow, ...)
// that break later declarations such as subscription_table::expect.
//
// What it starts: test_coordinator_fixture<> (an actor_system on the
// deterministic test scheduler `sched`, the scoped actor `self`; nothing
// runs until run() / sched.run()), plus the helpers the suites share:
// spawning the registry or a channel actor under test, recording
// subscribers (recording_subscriber.hpp; their sessions are recorders that
// are their own inline shard) and access to what those recorded.
//
// Lifetimes and clean-up: subscribers and connection actors reference the
// channels and the registry, and those reference them back (in the server a
// closed session ends the cycle). So the destructor ends them explicitly:
// first every actor in `spawned`, then the actors under test (those that
// spawn_registry / spawn_channel made), then runs the scheduler until all
// is done, so that the actor system can shut down. Stand-in actors a suite
// spawns itself (a fake registry or gateway) are not referenced back and
// end with the actor system.
#pragma once

#include "actors/channel_actor.hpp"
#include "actors/channel_registry.hpp"
#include "recording_subscriber.hpp"

#include <caf/test/dsl.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace herald::test {

class actor_fixture : public ::test_coordinator_fixture<> {
public:
  /// Actors a test spawned that hold references to the actors under test;
  /// ended first by the destructor.
  std::vector<caf::actor> spawned;

  ~actor_fixture() {
    for (auto& a : spawned)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    for (auto& a : under_test_)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    run();
  }

  /// Spawns a channel registry (its own channel actors get their epochs
  /// from `make_epoch`), runs until it is idle, and ends it with the fixture.
  caf::actor spawn_registry(actors::history_options history,
                            std::function<std::string()> make_epoch, caf::actor gateway = {},
                            std::shared_ptr<const net::channel_classes> classes = {}) {
    auto reg = sys.spawn(actors::channel_registry, history, std::move(make_epoch),
                         std::move(gateway), std::move(classes));
    under_test_.push_back(reg);
    run();
    return reg;
  }

  /// Spawns the channel actor `name` that reports to `registry` (and to
  /// `gateway` in cluster mode), runs until it is idle, and ends it with
  /// the fixture.
  caf::actor spawn_channel(std::string name, std::string epoch, actors::history_options history,
                           caf::actor registry, caf::actor gateway = {},
                           net::channel_class cls = {}) {
    auto ch = sys.spawn(actors::channel_actor, std::move(name), std::move(epoch), history,
                        std::move(registry), std::move(gateway), cls);
    under_test_.push_back(ch);
    run();
    return ch;
  }

  /// Spawns a recording subscriber (added to `spawned`); nothing runs yet.
  caf::actor spawn_subscriber() {
    auto s = sys.spawn(subscriber);
    spawned.push_back(s);
    return s;
  }

  /// What the recording subscriber `a`'s session received.
  recorder& sub(const caf::actor& a) { return *deref<caf::stateful_actor<sub_state>>(a).state.rec; }
  /// The recording subscriber `a`'s session, for a subscribe_request.
  std::shared_ptr<net::delivery_sink> sink_of(const caf::actor& a) {
    return deref<caf::stateful_actor<sub_state>>(a).state.rec;
  }

private:
  std::vector<caf::actor> under_test_;
};

} // namespace herald::test
