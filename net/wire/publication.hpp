// publication: one event published to one channel, with its offset and its
// encoded bytes for every transport. Built once by the channel actor and
// shared (as publication_ptr) by the channel's history and every subscriber
// session on every I/O shard; never mutated after it is built, except
// `delta`, which the channel actor sets before the publication reaches any
// shard, and the encodings built on first use (each under its once_flag, the
// compressed ones under `deflated_mutex`).
#pragma once

#include "net/wire/frame.hpp"
#include "net/wire/tags.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace herald::net {

/// One of a publication's frames compressed for permessage-deflate (RFC
/// 7692): `of` the uncompressed payload it was made from (one of the
/// publication's frames), `body` the compressed payload, `header` the frame
/// header with RSV1 set.
struct deflated_frame {
  const std::string* of = nullptr;
  frame body;
  std::string header;
};

struct publication {
  std::string channel;
  std::string epoch;        ///< the history generation the offset counts in
  std::uint64_t offset = 0; ///< 1 for the first publication of an epoch
  std::string event;        ///< validated event name
  std::string data;         ///< compact JSON text
  /// The publisher's tags besides `event` (net/wire/tags.hpp), which
  /// subscribers' filters match and Centrifugo pushes carry.
  publication_tags tags;
  frame sse;                ///< SSE event block, without the id line (WHATWG SSE)
  frame ws;                 ///< WebSocket "publication" message (payload only)
  /// RFC 6455 section 5.2 header of the unmasked server text frame carrying
  /// `ws` (2-10 bytes, so it fits a std::string's inline buffer: copying it
  /// per delivery allocates nothing).
  std::string ws_header;
  std::chrono::steady_clock::time_point at; ///< when the channel took it (history TTL)
  /// When this instance accepted it (net/obs/metrics.hpp now_ns(): HTTP publish
  /// parsed, or Redis message received), for publish-to-write latency.
  std::int64_t accepted_ns = 0;

  // The SSE event block with the channel envelope (net/wire/sse/encoder.hpp
  // encode_enveloped_event(), `?envelope=1`): encoded on first use by such a
  // subscriber, then shared like `sse`.
  mutable std::once_flag sse_envelope_once;
  mutable frame sse_envelope;

  // Centrifugo protocol push (net/wire/centrifugo/protocol.hpp publication_push()):
  // encoded on first use by a Centrifugo subscriber, then shared like `ws`, so
  // a deployment without Centrifugo clients never pays for it.
  mutable std::once_flag centrifugo_once;
  mutable frame centrifugo;
  mutable std::string centrifugo_header;
  // The same push in Centrifugo's Protobuf encoding (net/wire/centrifugo/protobuf.hpp),
  // a length-delimited Reply for binary frames; built on first use likewise.
  mutable std::once_flag centrifugo_pb_once;
  mutable frame centrifugo_pb;
  mutable std::string centrifugo_pb_header;

  // Delta compression (Centrifugo's `delta: "fossil"`, docs/centrifugo.md).
  /// Fossil delta (net/wire/fossil_delta.hpp) of `data` against the
  /// channel's previous publication (offset - 1, same epoch); empty when
  /// none was made (no subscriber of the channel asked for deltas, no
  /// predecessor, or the delta was not smaller). Set by the channel actor
  /// before the publication reaches a shard.
  mutable std::string delta;
  // The pushes to subscriptions that negotiated deltas, built on first use:
  // JSON, the full data as a JSON string, and the delta likewise with
  // `delta: true`; Protobuf, the delta bytes with `delta: true` (its full
  // push is centrifugo_pb).
  mutable std::once_flag centrifugo_full_once;
  mutable frame centrifugo_full;
  mutable std::string centrifugo_full_header;
  mutable std::once_flag centrifugo_delta_once;
  mutable frame centrifugo_delta;
  mutable std::string centrifugo_delta_header;
  mutable std::once_flag centrifugo_pb_delta_once;
  mutable frame centrifugo_pb_delta;
  mutable std::string centrifugo_pb_delta_header;
  // /v1/ws's publication on a `"delta":"fossil"` subscription
  // (net/wire/ws/protocol.hpp encode_delta_publication()): the data as a JSON
  // string, and the delta likewise with `"delta":true`.
  mutable std::once_flag ws_full_once;
  mutable frame ws_full;
  mutable std::string ws_full_header;
  mutable std::once_flag ws_delta_once;
  mutable frame ws_delta;
  mutable std::string ws_delta_header;

  // permessage-deflate: each of the frames above that a compressing
  // subscriber received, compressed once (net/ws/ws_session.cpp), at most one
  // entry per encoding; looked up under the mutex by the frame it was made of.
  mutable std::mutex deflated_mutex;
  mutable std::vector<deflated_frame> deflated;
};

using publication_ptr = std::shared_ptr<const publication>;

} // namespace herald::net
