#include "actors/publish_ticket.hpp"

#include "net/wire/errors.hpp"

namespace herald::actors {

publish_ticket::publish_ticket(net::http::publish_request req, done_fn done)
  : request(std::move(req)),
    offsets(request.channels.size(), 0),
    epochs(request.channels.size()),
    remaining_(request.channels.size()),
    done_(std::move(done)) {}

publish_ticket::~publish_ticket() {
  if (!answered_.load())
    answer(500, error_body(errc::internal, "the publication was not stored"));
}

void publish_ticket::complete(std::size_t index, std::uint64_t offset) {
  offsets[index] = offset;
  if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1)
    answer(200, net::http::encode_publish_response(request.channels, offsets));
}

void publish_ticket::complete(std::size_t index, std::uint64_t offset, const std::string& epoch) {
  epochs[index] = epoch; // before the count: the last completer reads every epoch
  complete(index, offset);
}

void publish_ticket::fail(unsigned status, const std::string& body) {
  answer(status, body);
}

void publish_ticket::answer(unsigned status, const std::string& body) {
  if (answered_.exchange(true))
    return;
  if (done_)
    done_(*this, status, body);
}

} // namespace herald::actors
