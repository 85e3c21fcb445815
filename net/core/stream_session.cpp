#include "net/core/stream_session.hpp"

#include "net/wire/errors.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstddef>

namespace herald::net {

namespace {
// One gathered write takes at most this much, so a long queue still lets
// the shard's other sessions run between writes.
constexpr std::size_t max_items_per_write = 256;
constexpr std::size_t max_bytes_per_write = 256 * 1024;

std::string endpoint_text(const tcp::socket& s) {
  beast::error_code ec;
  auto ep = s.remote_endpoint(ec);
  return ec ? std::string{"?"} : ep.address().to_string() + ":" + std::to_string(ep.port());
}
} // namespace

stream_session::stream_session(tcp::socket socket, session_options_ptr opts,
                               metrics::transport kind, const session_codec& codec)
  : socket_(std::move(socket)),
    opts_holder_(std::move(opts)),
    opts_(*opts_holder_),
    kind_(kind),
    shard_(&io_shard::of(socket_.get_executor())),
    queue_(opts_.client_max_buffer_bytes),
    table_(kind, codec, *this),
    write_started_(std::chrono::steady_clock::now()),
    peer_(endpoint_text(socket_)),
    timer_(socket_.get_executor()) {
  beast::error_code ignored;
  socket_.non_blocking(true, ignored); // do_write() writes directly when it can
}

void stream_session::send(std::string message) {
  shard_->post([self = shared_from_this(), m = std::move(message)]() mutable {
    if (!self->closing_ && !self->closed_)
      self->push_message({}, make_frame(std::move(m)), 0);
  });
}

void stream_session::close(close_request req) {
  shard_->post(
    [self = shared_from_this(), r = std::move(req)]() mutable { self->on_close(std::move(r)); });
}

void stream_session::begin(std::vector<std::string> channels,
                           std::vector<sse::cursor_entry> cursor) {
  shard_->post([self = shared_from_this(), ch = std::move(channels), c = std::move(cursor)] {
    if (!self->closed_)
      self->table_.begin(ch, c, self->begin_filter_);
  });
}

void stream_session::expect(std::string channel, std::uint64_t request, nlohmann::json id,
                            std::optional<stream_position> since, bool reject_unrecovered,
                            bool delta, tags_filter_ptr filter) {
  shard_->post([self = shared_from_this(), c = std::move(channel), request, i = std::move(id),
                s = std::move(since), reject_unrecovered, delta, f = std::move(filter)]() mutable {
    if (self->closed_)
      return;
    const auto timeout = self->opts_.subscribe_timeout;
    const auto due = timeout.count() > 0 ? std::chrono::steady_clock::now() + timeout
                                         : subscription_table::time_point{};
    self->table_.expect(c, request, std::move(i), std::move(s), reject_unrecovered, due, delta,
                        std::move(f));
    if (timeout.count() > 0)
      self->arm_subscribe_timer();
  });
}

void stream_session::forget(std::string channel, std::optional<nlohmann::json> unsub_id) {
  shard_->post(
    [self = shared_from_this(), c = std::move(channel), u = std::move(unsub_id)]() mutable {
      if (!self->closed_)
        self->table_.forget(c, std::move(u));
    });
}

void stream_session::revoke(std::string channel, std::string why) {
  shard_->post([self = shared_from_this(), c = std::move(channel), w = std::move(why)] {
    if (!self->closed_)
      self->table_.revoke(c, w);
  });
}

void stream_session::arm_subscribe_timer() {
  if (closed_ || deadline_set(deadline::subscribe))
    return;
  if (auto due = table_.next_due())
    set_deadline(deadline::subscribe, *due);
}

void stream_session::give_up_overdue_subscribes() {
  const auto ms = opts_.subscribe_timeout.count();
  const auto why = "the channel did not answer within " + std::to_string(ms) +
                   " ms (Redis unreachable?); subscribe again";
  // Answered to the client first, then told to the actor in the same turn:
  // the actor forgets the subscribe before any command the client sends in
  // reply can reach it.
  for (auto& [channel, request] : table_.give_up_overdue(clock::now(), why))
    if (events_)
      events_->on_subscribe_timeout(std::move(channel), request);
  arm_subscribe_timer();
}

// -- deadlines -----------------------------------------------------------------

void stream_session::set_deadline(deadline which, clock::time_point at) {
  deadlines_[index(which)] = at;
  if (at < timer_at_ && !closed_)
    arm_timer();
}

void stream_session::arm_timer() {
  auto next = unset;
  for (auto at : deadlines_)
    next = std::min(next, at);
  if (next >= timer_at_)
    return; // armed early enough (or nothing is due)
  timer_at_ = next;
  timer_.expires_at(next); // a pending wait ends with operation_aborted
  timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (!ec)
      self->on_timer();
  });
}

std::uint64_t stream_session::bytes_acked() const noexcept {
  // glibc's struct tcp_info stops at tcpi_total_retrans; the kernel's
  // (linux/tcp.h, a UAPI that only grows) goes on with tcpi_pacing_rate,
  // tcpi_max_pacing_rate and tcpi_bytes_acked (Linux 4.1).
  struct tcp_info_with_acked {
    ::tcp_info base;
    std::uint64_t pacing_rate;
    std::uint64_t max_pacing_rate;
    std::uint64_t bytes_acked;
  };
  static_assert(sizeof(::tcp_info) == 104, "glibc's tcp_info as linux/tcp.h's first fields");
  tcp_info_with_acked info{};
  socklen_t len = sizeof info;
  auto fd = const_cast<tcp::socket&>(socket_).native_handle();
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
      len < offsetof(tcp_info_with_acked, bytes_acked) + sizeof info.bytes_acked)
    return 0;
  return info.bytes_acked;
}

void stream_session::on_timer() {
  timer_at_ = unset;
  if (closed_)
    return;
  const auto now = clock::now();
  for (std::size_t i = 0; i < deadline_count && !closed_; ++i) {
    if (deadlines_[i] > now)
      continue;
    deadlines_[i] = unset;
    switch (static_cast<deadline>(i)) {
    case deadline::grace:
      if (now < grace_end_ && bytes_acked() > acked_at_grace_check_) {
        // The peer still reads: its last bytes are on their way.
        acked_at_grace_check_ = bytes_acked();
        set_deadline(deadline::grace, std::min(now + grace_, grace_end_));
      } else {
        finish(closing_reason_);
      }
      break;
    case deadline::write:
      // The write in flight may have started after the deadline was set.
      if (!write_busy())
        break;
      if (now - write_started_ < opts_.write_timeout) {
        set_deadline(deadline::write, write_started_ + opts_.write_timeout);
      } else if (unsent_capped_ && bytes_acked() > acked_at_write_check_) {
        // A conflated subscriber on a slow link: one write may take longer
        // than the timeout (the peer's window opens in steps), but the peer
        // acknowledged bytes since the last check, so the write progresses.
        acked_at_write_check_ = bytes_acked();
        set_deadline(deadline::write, now + opts_.write_timeout);
      } else {
        finish(close_reason::write_timeout);
      }
      break;
    case deadline::subscribe:
      if (!closing_)
        give_up_overdue_subscribes();
      break;
    default:
      if (!closing_)
        on_deadline(static_cast<deadline>(i));
      break;
    }
  }
  if (!closed_)
    arm_timer();
}

// The table may go on writing after a write of its own closed the session
// (a replay that crosses the high-water mark): once closing, nothing more is
// queued, so the close's final bytes stay the last ones (RFC 6455 section
// 5.5.1: nothing after a Close frame; SSE: no event after the slow-client
// gap, whose cursor must be the last one the client holds).
void stream_session::write_publication(const publication&, std::string prefix, const frame& body,
                                       std::int64_t accepted_ns, conflation_key key) {
  if (closing_ || closed_)
    return;
  push(std::move(prefix), body, accepted_ns, key);
}

void stream_session::write_message(std::string id_line, std::string body) {
  if (closing_ || closed_)
    return;
  push_message(std::move(id_line), make_frame(std::move(body)), 0);
}

void stream_session::on_answer(const subscription_answer& a) {
  if (closing_ || closed_)
    return;
  if (a.overflow == overflow_policy::conflate && !unsent_capped_ &&
      opts_.conflate_unsent_bytes > 0) {
    // The kernel would otherwise take MiBs (send buffer autotuning) that
    // conflation never reaches; a failure only leaves the kernel's default.
    unsent_capped_ = true;
    using notsent_lowat = asio::detail::socket_option::integer<IPPROTO_TCP, TCP_NOTSENT_LOWAT>;
    beast::error_code ignored;
    socket_.set_option(notsent_lowat(static_cast<int>(
                         std::min<std::size_t>(opts_.conflate_unsent_bytes, 1u << 30))),
                       ignored);
  }
  table_.on_answer(a);
}

void stream_session::on_publication(const publication_ptr& p) {
  if (!closing_ && !closed_)
    table_.on_publication(p);
}

void stream_session::push(std::string&& prefix, frame body, std::int64_t accepted_ns,
                          outbound_queue::conflation_key key) {
  if (closed_)
    return;
  // Over the mark the queue conflates what it can (keyed publications);
  // crossed_high means that what it cannot shed passed the mark.
  auto mark = queue_.push(std::move(prefix), std::move(body), accepted_ns, key);
  if (mark == outbound_queue::watermark::crossed_high && !closing_) {
    // The slow-client policy (backpressure), applied here, at the mark: the
    // client is closed as slow_client (its codec says it: WebSocket 1013,
    // SSE a last herald.gap event) and may reconnect with its position to
    // recover from history; the actor hears of it through on_closed.
    const auto& row = info(errc::slow_client);
    on_close({close_reason::slow_client, row.close_code,
              "slow client: outbound buffer over its limit"});
    return;
  }
  if (!write_busy())
    do_write();
}

void stream_session::on_close(close_request req) {
  if (closing_ || closed_)
    return;
  closing_ = true;
  closing_reason_ = req.reason;
  if (!req.flush_queued)
    queue_.drop_pending();
  // Give the final bytes (and a WebSocket client's close answer) their
  // chance: the grace starts again while the peer acknowledges bytes (a
  // slow link still reading gets its close signal), up to grace_max; a
  // client that does not read gets closed when a grace ends.
  const auto now = clock::now();
  grace_ = req.grace.value_or(opts_.close_grace);
  grace_end_ = now + std::max(grace_, req.grace_max.value_or(opts_.close_grace_max));
  acked_at_grace_check_ = bytes_acked();
  set_deadline(deadline::grace, now + grace_);
  push_final(req); // may write at once, and finish
  if (closed_)
    return;
  if (queue_.empty()) {
    on_final_written();
    return;
  }
  if (!write_busy())
    do_write();
}

void stream_session::do_write() {
  // Most writes fit the socket's send buffer at once: write them here, with
  // one non-blocking writev and no asynchronous operation (no handler to
  // allocate, queue and run per delivery, no write timer). What the socket
  // does not take goes back to the queue (outbound_queue::requeue_unwritten),
  // where it conflates and where a close drops it: only the rest of a message
  // the socket took part of goes out through async_write; else the session
  // waits until the socket can take more. A connection with a conflated
  // subscription hands over at most --conflate-unsent-bytes per writev, so
  // that the kernel holds little more than that.
  const auto max_bytes = unsent_capped_ ? std::max<std::size_t>(opts_.conflate_unsent_bytes, 1)
                                        : max_bytes_per_write;
  for (int rounds = 0; rounds < 4 && !queue_.empty() && !closed_; ++rounds) {
    views_.clear();
    queue_.begin_write(views_, max_items_per_write, max_bytes);
    buffers_.clear();
    std::size_t total = 0;
    for (auto v : views_) {
      buffers_.emplace_back(v.data(), v.size());
      total += v.size();
    }
    const auto now = std::chrono::steady_clock::now();
    beast::error_code ec;
    auto n = socket_.write_some(buffers_, ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      ec = {};
      n = 0;
    }
    if (ec) {
      finish(closing_ ? closing_reason_ : close_reason::client);
      return;
    }
    // The write timeout counts from the last progress (or from the first
    // attempt after the queue was idle).
    if (n > 0 || !stalled_)
      write_started_ = now;
    if (n < total) {
      stalled_ = true;
      const auto rest = queue_.requeue_unwritten(n);
      set_deadline(deadline::write, write_started_ + opts_.write_timeout);
      if (unsent_capped_)
        acked_at_write_check_ = bytes_acked();
      if (rest == 0) {
        // Whole items written (maybe none): the written ones are done, and
        // the next write waits until the socket can take more.
        if (n > 0 && !written(n))
          return;
        awaiting_writable_ = true;
        socket_.async_wait(tcp::socket::wait_write,
                           [self = shared_from_this()](beast::error_code ec2) {
                             self->awaiting_writable_ = false;
                             if (self->closed_)
                               return;
                             if (ec2) {
                               self->finish(self->closing_ ? self->closing_reason_
                                                           : close_reason::client);
                               return;
                             }
                             if (!self->queue_.writing() && !self->queue_.empty())
                               self->do_write();
                           });
        return;
      }
      // The rest of the message the socket cut, when the socket can take it.
      std::size_t skip = n;
      std::size_t first = 0;
      while (skip >= buffers_[first].size()) {
        skip -= buffers_[first].size();
        ++first;
      }
      buffers_.erase(buffers_.begin(), buffers_.begin() + static_cast<std::ptrdiff_t>(first));
      buffers_.front() += skip;
      std::size_t left = 0;
      std::size_t last = 0;
      while (left < rest) {
        left += buffers_[last].size();
        ++last;
      }
      buffers_.resize(last);
      asio::async_write(socket_, buffers_,
                        [self = shared_from_this(), n](beast::error_code ec2, std::size_t more) {
                          self->on_write(ec2, n + more);
                        });
      return;
    }
    stalled_ = false;
    if (!written(total))
      return;
  }
  if (!queue_.empty() && !closed_ && !write_busy()) {
    // A long queue: let the shard's other sessions run before the rest.
    asio::post(socket_.get_executor(), [self = shared_from_this()] {
      if (!self->closed_ && !self->write_busy() && !self->queue_.empty())
        self->do_write();
    });
  }
}

bool stream_session::written(std::size_t bytes) {
  metrics::written(kind_, queue_.in_flight(), bytes);
  queue_.complete_write(metrics::now_ns());
  if (!queue_.empty())
    return true;
  if (views_.capacity() > 64) {
    // A burst is over: an idle connection keeps no large write vectors.
    std::vector<std::string_view>{}.swap(views_);
    std::vector<asio::const_buffer>{}.swap(buffers_);
  }
  if (closing_)
    on_final_written();
  return !closed_;
}

void stream_session::on_write(beast::error_code ec, std::size_t bytes) {
  if (closed_)
    return;
  if (ec) {
    finish(closing_ ? closing_reason_ : close_reason::client);
    return;
  }
  stalled_ = false; // async_write completes only once all is written
  if (written(bytes) && !queue_.empty())
    do_write();
}

void stream_session::finish(close_reason reason) {
  if (closed_)
    return;
  closed_ = true;
  beast::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  timer_.cancel();
  on_finished();
  if (auto ev = std::move(events_))
    ev->on_closed(reason);
}

} // namespace herald::net
