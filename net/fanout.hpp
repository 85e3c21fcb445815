// fanout: the publish path's seam between channels (actors/) and sessions
// (net/). See docs/architecture.md for the diagram.
//
// A session lives on one I/O shard (one io_context run by one thread) for its
// whole life. A channel actor keeps, per shard, the list of its subscribers'
// sessions, and hands each publication to each shard in ONE post carrying the
// publication and that list (shard::fanout). The shard's thread then calls
// every listed session's on_publication() in turn: there is no actor message
// and no post per delivery. The answer to a subscribe, with the publications a
// recovering subscriber missed, travels the same way (shard::answer) and in
// the same queue, so the session sees it before every live publication the
// channel fans out after answering: the seam between history and live
// delivery is exact.
//
// Lifetimes: a channel holds its subscribers' sessions (shared_ptr) until the
// connection actor unsubscribes or ends; a fan-out post holds its list (and
// so the sessions) until the shard ran it. A session that closed meanwhile
// ignores what still reaches it.
#pragma once

#include "net/wire/channel_class.hpp"
#include "net/wire/publication.hpp"
#include "net/wire/stream_position.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace herald::net {

/// A channel's answer to one subscribe, as the subscriber's session receives it.
struct subscription_answer {
  std::string channel;
  std::uint64_t request = 0; ///< the connection's number for the subscribe it answers
  stream_position position;  ///< epoch and offset of the channel's latest publication
  bool recovered = false;    ///< a cursor was given and every missed publication is in `replay`
  std::string reason;        ///< why recovery failed ("epoch_changed", ...; empty otherwise)
  /// The missed publications, in offset order. Without `recovered` only when
  /// the request asked for the current epoch's history (epoch_changed).
  std::vector<publication_ptr> replay;
  /// The overflow policy of the channel's class (net/wire/channel_class.hpp):
  /// what the session does with this subscription when the connection's
  /// outbound queue passes the high-water mark.
  overflow_policy overflow = overflow_policy::close;
  /// The channel's class allows delta compression; without it a subscribe
  /// that asked for deltas gets full publications and a reply saying so.
  bool delta_allowed = true;
  /// Cache recovery (recovery_mode::cache): `replay` is the channel's latest
  /// publication alone, given instead of a gap to a subscriber without a
  /// position or one whose position could not be recovered exactly; the
  /// subscription continues from it (no gap for the offsets in between).
  bool cached = false;
};

class shard;

/// The data seam: the receiving end of the publish path, one client session
/// (net/session_control.hpp is the control seam it underlies). Every call
/// below except home() runs on the session's shard thread.
class delivery_sink {
public:
  virtual ~delivery_sink() = default;
  /// The shard the session belongs to for its life. Any thread.
  virtual shard& home() noexcept = 0;
  /// A channel answered a subscribe of this session's connection.
  virtual void on_answer(const subscription_answer& answer) = 0;
  /// A live publication of a channel this session's connection subscribed to.
  virtual void on_publication(const publication_ptr& p) = 0;
};

/// The sessions of one shard that subscribe to one channel, as of one
/// publication. Immutable once handed to a shard.
using subscriber_list = std::vector<std::shared_ptr<delivery_sink>>;
using subscriber_list_ptr = std::shared_ptr<const subscriber_list>;

/// One I/O shard's inbound queue (net/core/io_shard.hpp runs it on the shard's
/// thread; tests use an inline one). Every method is thread-safe, never
/// blocks for long, and runs what it is given on the shard's thread in the
/// order it was given (FIFO across all three methods).
class shard {
public:
  virtual ~shard() = default;
  /// Calls on_publication(p) on every session of `list`.
  virtual void fanout(publication_ptr p, subscriber_list_ptr list) = 0;
  /// Calls on_answer(answer) on `to`.
  virtual void answer(std::shared_ptr<delivery_sink> to, subscription_answer answer) = 0;
  /// Runs `task` (control: commands' replies, subscribe bookkeeping, close).
  virtual void post(std::function<void()> task) = 0;
};

} // namespace herald::net
