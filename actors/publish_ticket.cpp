#include "actors/publish_ticket.hpp"

namespace herald::actors {

publish_ticket::publish_ticket(net::http::publish_request req, done_fn done)
  : request(std::move(req)),
    offsets(request.channels.size(), 0),
    remaining_(request.channels.size()),
    done_(std::move(done)) {
}

publish_ticket::~publish_ticket() {
  // A channel actor that died with the ticket in its mailbox never completed
  // it: the publisher still gets an answer.
  if (remaining_.load() > 0 && done_)
    done_(*this, true);
}

void publish_ticket::complete(std::size_t index, std::uint64_t offset) {
  offsets[index] = offset;
  if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1 && done_) {
    auto done = std::move(done_);
    done(*this, false);
  }
}

} // namespace herald::actors
