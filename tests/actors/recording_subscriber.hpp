// A subscriber that records what a channel sends it, shared by the channel
// and registry suites: the connection actor's side (the bookkeeping answer)
// in an actor, the session's side (answers and publications, net/fanout.hpp)
// in a recorder that is also its own inline shard: it runs what a shard is
// given at once, on the caller's thread (the test scheduler's only one).
#pragma once

#include "actors/messages.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <vector>

namespace herald::test {

/// An I/O shard that runs everything at once, for deterministic actor tests.
class inline_shard : public net::shard {
public:
  void fanout(net::publication_ptr p, net::subscriber_list_ptr list) override {
    for (const auto& s : *list)
      s->on_publication(p);
  }
  void answer(std::shared_ptr<net::delivery_sink> to, net::subscription_answer a) override {
    to->on_answer(a);
  }
  void post(std::function<void()> task) override { task(); }
};

struct recorder : net::delivery_sink {
  std::vector<actors::subscribe_result> answers;
  std::vector<actors::publication_ptr> pubs;
  inline_shard shard;
  net::shard& home() noexcept override { return shard; }
  void on_answer(const net::subscription_answer& a) override { answers.push_back(a); }
  void on_publication(const net::publication_ptr& p) override { pubs.push_back(p); }
};

struct sub_state {
  std::shared_ptr<recorder> rec = std::make_shared<recorder>();
  std::vector<caf::actor> channels; ///< channel actors named by bookkeeping answers
};

inline caf::behavior subscriber(caf::stateful_actor<sub_state>* self) {
  return {
    [self](actors::subscribed_atom, const std::string&, std::uint64_t, const caf::actor& ch) {
      self->state.channels.push_back(ch);
    },
  };
}

} // namespace herald::test
