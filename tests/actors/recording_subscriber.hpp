// A subscriber actor that records what a channel sends it (answers and
// publications), shared by the channel and registry suites.
#pragma once

#include "actors/messages.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <vector>

namespace herald::test {

struct sub_state {
  std::vector<actors::subscribe_result> answers;
  std::vector<actors::publication_ptr> pubs;
};

inline caf::behavior subscriber(caf::stateful_actor<sub_state>* self) {
  return {
    [self](actors::subscribed_atom, const actors::subscribe_result& r) {
      self->state.answers.push_back(r);
    },
    [self](const actors::publication_ptr& p) { self->state.pubs.push_back(p); },
  };
}

} // namespace herald::test
