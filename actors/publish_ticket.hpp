// publish_ticket: one POST /v1/publish on its way through the actors. In
// in-process mode the registry hands it to the channel actor of every
// channel it names and each records the offset it assigned; in cluster mode
// the Redis gateway records the offsets Redis assigned, or how a channel's
// publication failed. The last channel to report answers the publisher (200
// when all stored it, else one 503 that says what the whole publish did:
// docs/protocol.md "Publish outcomes"). Shared between actors (and their
// threads) through publish_ticket_ptr.
#pragma once

#include "net/wire/http/publish_request.hpp"
#include "net/wire/publish_outcome.hpp"
#include "net/obs/metrics.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace herald::actors {

struct publish_ticket {
  /// Called exactly once, on the thread that completes or fails the ticket,
  /// with what the publish did (the positions in request order, or which of
  /// the failed outcomes and why); the route that answers encodes it.
  using done_fn = std::function<void(const publish_ticket&, const net::publish_outcome&)>;

  publish_ticket(net::http::publish_request req, done_fn done);
  /// A ticket dropped incomplete (an actor died with it) answers
  /// publish_outcome::result::dropped (errc::internal: HTTP 500).
  ~publish_ticket();
  publish_ticket(const publish_ticket&) = delete;
  publish_ticket& operator=(const publish_ticket&) = delete;

  /// Records the offset assigned for channel number `index`. Thread-safe;
  /// each index is completed at most once.
  void complete(std::size_t index, std::uint64_t offset);
  /// The same, with the epoch the offset counts in (in-process mode; the
  /// gateway's completions leave it empty).
  void complete(std::size_t index, std::uint64_t offset, const std::string& epoch);
  /// Records that channel number `index` suppressed the publication
  /// (`reason`, e.g. "stale_version": not stored, not delivered) at its
  /// unchanged position `offset` in `epoch`. Thread-safe, like complete().
  void suppress(std::size_t index, std::uint64_t offset, const std::string& epoch,
                const std::string& reason);

  /// How one channel's publication was not acknowledged (cluster mode).
  enum class failure : std::uint8_t {
    not_stored,     ///< Redis certainly did not store it (never ran the script)
    not_replicated, ///< the master stored it; fewer replicas confirmed it than asked
    unknown,        ///< sent, no answer: it may be stored and delivered
  };

  /// Records that channel number `index` was not acknowledged: `what` says
  /// whether Redis stored it, `reason` why (one line, for the message).
  /// Thread-safe; each index is completed or failed at most once. Once every
  /// channel reported, the outcome (errc::unavailable: HTTP 503) says what
  /// the whole publish did: "did not store ...; retry" only when
  /// no channel may have stored it, "stored ..., but not replicated" when
  /// every channel stored it, and otherwise "may have stored ...: retry with
  /// the same Idempotency-Key" (some channels stored it and others did not,
  /// or a channel's outcome is unknown).
  void fail(std::size_t index, failure what, const std::string& reason);

  net::http::publish_request request;
  std::vector<std::uint64_t> offsets;
  /// The epoch of each offset; empty when the completer did not say.
  std::vector<std::string> epochs;
  /// Why each channel suppressed the publication; empty where it stored it.
  std::vector<std::string> suppressed;
  /// When the publish was accepted (metrics::now_ns()): the start of its
  /// publish-to-write latency.
  std::int64_t accepted_ns = net::metrics::now_ns();

private:
  void answer(const net::publish_outcome& outcome);
  // Called by the last channel to report.
  void finish();

  struct failed_channel {
    std::size_t index;
    failure what;
    std::string reason;
  };
  std::mutex failures_mtx_;
  std::vector<failed_channel> failures_; // in the order they were reported

  std::atomic<std::size_t> remaining_;
  std::atomic<bool> answered_{false};
  done_fn done_;
};

using publish_ticket_ptr = std::shared_ptr<publish_ticket>;

} // namespace herald::actors
