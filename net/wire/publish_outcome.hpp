// publish_outcome: what one publish did, as a value, from the actors that
// carried it out to the HTTP route that answers it; each route encodes it
// once, in its own shape (POST /v1/publish: docs/protocol.md "Publish
// outcomes"; Centrifugo's /api/publish and /api/broadcast: docs/centrifugo.md
// "Server API").
#pragma once

#include "net/wire/errors.hpp"
#include "net/wire/stream_position.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace herald::net {

struct publish_outcome {
  /// The four outcomes a publisher must tell apart (docs/protocol.md
  /// "Publish outcomes"), and a publish Herald lost track of.
  enum class result : std::uint8_t {
    stored,         ///< every channel stored it (replicated as asked)
    not_replicated, ///< every channel stored it; fewer replicas confirmed than asked
    not_stored,     ///< no channel stored it: a plain retry is safe
    maybe_stored,   ///< some channels stored it, or an outcome is unknown:
                    ///< retry with the same Idempotency-Key
    dropped,        ///< an actor died with it (a bug): not stored, as far as Herald knows
  };

  result what = result::stored;
  /// errc::none when stored; errc::unavailable for the three Redis outcomes;
  /// errc::internal when dropped.
  errc code = errc::none;
  /// What the publish did and what to do, for the publisher (empty when stored).
  std::string message;
  /// When stored: each channel's position, in request order (the epoch may
  /// be empty where the instance does not know it: cluster mode).
  std::vector<stream_position> positions;
  /// When stored: empty, or for each channel in request order why its
  /// publication was suppressed (neither stored nor delivered; its position
  /// is the channel's unchanged one), e.g. "stale_version"; empty where it
  /// was stored.
  std::vector<std::string> suppressed{};

  bool stored() const noexcept { return what == result::stored; }
};

} // namespace herald::net
