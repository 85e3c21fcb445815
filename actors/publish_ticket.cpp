#include "actors/publish_ticket.hpp"

#include "net/wire/errors.hpp"

#include <algorithm>

namespace herald::actors {

publish_ticket::publish_ticket(net::http::publish_request req, done_fn done)
  : request(std::move(req)),
    offsets(request.channels.size(), 0),
    epochs(request.channels.size()),
    suppressed(request.channels.size()),
    remaining_(request.channels.size()),
    done_(std::move(done)) {}

publish_ticket::~publish_ticket() {
  if (!answered_.load())
    answer({net::publish_outcome::result::dropped, errc::internal, "the publication was not stored",
            {}});
}

void publish_ticket::complete(std::size_t index, std::uint64_t offset) {
  offsets[index] = offset;
  if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1)
    finish();
}

void publish_ticket::complete(std::size_t index, std::uint64_t offset, const std::string& epoch) {
  epochs[index] = epoch; // before the count: the last completer reads every epoch
  complete(index, offset);
}

void publish_ticket::suppress(std::size_t index, std::uint64_t offset, const std::string& epoch,
                              const std::string& reason) {
  suppressed[index] = reason; // before the count, like the epoch
  complete(index, offset, epoch);
}

void publish_ticket::fail(std::size_t index, failure what, const std::string& reason) {
  {
    std::lock_guard<std::mutex> guard{failures_mtx_};
    failures_.push_back({index, what, reason});
  }
  if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1)
    finish();
}

void publish_ticket::finish() {
  std::vector<failed_channel> failed;
  {
    std::lock_guard<std::mutex> guard{failures_mtx_};
    failed = failures_;
  }
  using result = net::publish_outcome::result;
  if (failed.empty()) {
    net::publish_outcome stored;
    stored.positions.resize(offsets.size());
    for (std::size_t i = 0; i < offsets.size(); ++i)
      stored.positions[i] = {epochs[i], offsets[i]};
    if (std::any_of(suppressed.begin(), suppressed.end(),
                    [](const std::string& s) { return !s.empty(); }))
      stored.suppressed = suppressed;
    answer(stored);
    return;
  }
  const std::size_t total = request.channels.size();
  std::size_t not_stored = 0, unknown = 0;
  for (const auto& f : failed) {
    not_stored += f.what == failure::not_stored ? 1 : 0;
    unknown += f.what == failure::unknown ? 1 : 0;
  }
  // The reason to quote: the first channel whose outcome decided the answer.
  auto quote = [&](failure kind) {
    for (const auto& f : failed)
      if (f.what == kind)
        return total > 1 ? "channel " + request.channels[f.index] + ": " + f.reason : f.reason;
    return std::string{};
  };
  std::string message;
  auto what = result::maybe_stored;
  if (not_stored == total) {
    what = result::not_stored;
    message = "Redis did not store the publication (" + quote(failure::not_stored) + "); retry";
  } else if (not_stored == 0 && unknown == 0) {
    what = result::not_replicated;
    message = "Redis stored the publication, but " + quote(failure::not_replicated) +
              ": it may be lost in a failover; retry with the same Idempotency-Key, or it is "
              "stored twice";
  } else if (unknown > 0) {
    message = "Redis may have stored the publication (" + quote(failure::unknown) +
              "): retry with the same Idempotency-Key; without one a retry may store it twice";
  } else {
    // Stored on some channels and not on others: only a retry with the same
    // key is safe (it stores it once where it is missing).
    message = "Redis stored the publication on " + std::to_string(total - not_stored) + " of " +
              std::to_string(total) + " channels, not on " + quote(failure::not_stored) +
              ": retry with the same Idempotency-Key; without one a retry stores it twice";
  }
  answer({what, errc::unavailable, std::move(message), {}});
}

void publish_ticket::answer(const net::publish_outcome& outcome) {
  if (answered_.exchange(true))
    return;
  if (done_)
    done_(*this, outcome);
}

} // namespace herald::actors
