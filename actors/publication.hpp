// publication: the channel actor's view of net::publication (net/wire/publication.hpp),
// and the one function that builds it.
#pragma once

#include "net/wire/publication.hpp"

#include <caf/actor_clock.hpp>

#include <cstdint>
#include <string>

namespace herald::actors {

using net::publication;
using net::publication_ptr;

/// Builds a publication and encodes its frames (SSE event block, WebSocket
/// message and its RFC 6455 frame header) once.
/// @param data compact JSON text (already validated).
/// @param accepted_ns when this instance accepted the publication
///        (metrics::now_ns()); 0: now.
/// @param tags the publisher's tags besides the event (net/wire/tags.hpp).
publication_ptr make_publication(std::string channel, std::string epoch, std::uint64_t offset,
                                 std::string event, std::string data,
                                 caf::actor_clock::time_point at, std::int64_t accepted_ns = 0,
                                 net::publication_tags tags = {});

} // namespace herald::actors
