// publish_ticket: one POST /v1/publish on its way through the actors. In
// in-process mode the registry hands it to the channel actor of every
// channel it names and each records the offset it assigned; in cluster mode
// the Redis gateway records the offsets Redis assigned. The last channel to
// complete answers the publisher; any failure answers it at once. Shared
// between actors (and their threads) through publish_ticket_ptr.
#pragma once

#include "net/wire/http/publish_request.hpp"
#include "net/obs/metrics.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace herald::actors {

struct publish_ticket {
  /// Called exactly once, on the thread that completes or fails the ticket,
  /// with the HTTP status and JSON body for the publisher (200 and
  /// `{"offsets":{...}}` in request order, or an error).
  using done_fn =
    std::function<void(const publish_ticket&, unsigned status, const std::string& body)>;

  publish_ticket(net::http::publish_request req, done_fn done);
  /// A ticket dropped incomplete (an actor died with it) answers 500.
  ~publish_ticket();
  publish_ticket(const publish_ticket&) = delete;
  publish_ticket& operator=(const publish_ticket&) = delete;

  /// Records the offset assigned for channel number `index`. Thread-safe;
  /// each index is completed at most once.
  void complete(std::size_t index, std::uint64_t offset);
  /// The same, with the epoch the offset counts in (in-process mode; the
  /// gateway's completions leave it empty).
  void complete(std::size_t index, std::uint64_t offset, const std::string& epoch);

  /// Answers the publisher with an error now (later completions are
  /// ignored). Thread-safe; only the first answer counts.
  void fail(unsigned status, const std::string& body);

  net::http::publish_request request;
  std::vector<std::uint64_t> offsets;
  /// The epoch of each offset; empty when the completer did not say.
  std::vector<std::string> epochs;
  /// When the publish was accepted (metrics::now_ns()): the start of its
  /// publish-to-write latency.
  std::int64_t accepted_ns = net::metrics::now_ns();

private:
  void answer(unsigned status, const std::string& body);

  std::atomic<std::size_t> remaining_;
  std::atomic<bool> answered_{false};
  done_fn done_;
};

using publish_ticket_ptr = std::shared_ptr<publish_ticket>;

} // namespace herald::actors
