// publish_ticket: one POST /v1/publish on its way through the actors. The
// registry hands it to the channel actor of every channel it names; each
// channel records the offset it assigned; the last one completes it. Shared
// between actors (and their threads) through publish_ticket_ptr.
#pragma once

#include "net/http/publish_request.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace herald::actors {

struct publish_ticket {
  /// Called once, on the thread of the channel that completes last, with
  /// the offsets in request order; or with `failed` true when a channel
  /// dropped the ticket (the ticket died incomplete).
  using done_fn = std::function<void(const publish_ticket&, bool failed)>;

  publish_ticket(net::http::publish_request req, done_fn done);
  ~publish_ticket();
  publish_ticket(const publish_ticket&) = delete;
  publish_ticket& operator=(const publish_ticket&) = delete;

  /// Records the offset assigned by channel number `index`. Thread-safe;
  /// each index is completed at most once.
  void complete(std::size_t index, std::uint64_t offset);

  net::http::publish_request request;
  std::vector<std::uint64_t> offsets;

private:
  std::atomic<std::size_t> remaining_;
  done_fn done_;
};

using publish_ticket_ptr = std::shared_ptr<publish_ticket>;

} // namespace herald::actors
