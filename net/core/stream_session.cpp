#include "net/core/stream_session.hpp"

#include "net/wire/errors.hpp"

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

stream_session::stream_session(tcp::socket socket, const session_options& opts,
                               metrics::transport kind, const session_codec& codec)
  : socket_(std::move(socket)),
    opts_(opts),
    kind_(kind),
    shard_(&io_shard::of(socket_.get_executor())),
    queue_(opts.client_max_buffer_bytes),
    table_(kind, codec, *this),
    grace_timer_(socket_.get_executor()),
    write_timer_(socket_.get_executor()),
    subscribe_timer_(socket_.get_executor()),
    write_started_(std::chrono::steady_clock::now()),
    peer_(endpoint_text(socket_)) {
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
      self->table_.begin(ch, c);
  });
}

void stream_session::expect(std::string channel, std::uint64_t request, nlohmann::json id,
                            std::optional<stream_position> since, bool reject_unrecovered) {
  shard_->post([self = shared_from_this(), c = std::move(channel), request, i = std::move(id),
                s = std::move(since), reject_unrecovered]() mutable {
    if (self->closed_)
      return;
    const auto timeout = self->opts_.subscribe_timeout;
    const auto due = timeout.count() > 0 ? std::chrono::steady_clock::now() + timeout
                                         : subscription_table::time_point{};
    self->table_.expect(c, request, std::move(i), std::move(s), reject_unrecovered, due);
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
  if (subscribe_timer_armed_ || closed_)
    return;
  auto due = table_.next_due();
  if (!due)
    return;
  subscribe_timer_armed_ = true;
  subscribe_timer_.expires_at(*due);
  subscribe_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    self->subscribe_timer_armed_ = false;
    if (ec || self->closed_ || self->closing_)
      return;
    const auto ms = self->opts_.subscribe_timeout.count();
    const auto why = "the channel did not answer within " + std::to_string(ms) +
                     " ms (Redis unreachable?); subscribe again";
    // Answered to the client first, then told to the actor in the same
    // turn: the actor forgets the subscribe before any command the client
    // sends in reply can reach it.
    for (auto& [channel, request] :
         self->table_.give_up_overdue(std::chrono::steady_clock::now(), why))
      if (self->events_)
        self->events_->on_subscribe_timeout(std::move(channel), request);
    self->arm_subscribe_timer();
  });
}

// The table may go on writing after a write of its own closed the session
// (a replay that crosses the high-water mark): once closing, nothing more is
// queued, so the close's final bytes stay the last ones (RFC 6455 section
// 5.5.1: nothing after a Close frame; SSE: no event after the slow-client
// gap, whose cursor must be the last one the client holds).
void stream_session::write_publication(const publication&, std::string prefix, const frame& body,
                                       std::int64_t accepted_ns) {
  if (closing_ || closed_)
    return;
  push(std::move(prefix), body, accepted_ns);
}

void stream_session::write_message(std::string id_line, std::string body) {
  if (closing_ || closed_)
    return;
  push_message(std::move(id_line), make_frame(std::move(body)), 0);
}

void stream_session::on_answer(const subscription_answer& a) {
  if (!closing_ && !closed_)
    table_.on_answer(a);
}

void stream_session::on_publication(const publication_ptr& p) {
  if (!closing_ && !closed_)
    table_.on_publication(p);
}

void stream_session::push(std::string&& prefix, frame body, std::int64_t accepted_ns) {
  if (closed_)
    return;
  auto mark = queue_.push(std::move(prefix), std::move(body), accepted_ns);
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
  if (!queue_.writing())
    do_write();
}

void stream_session::on_close(close_request req) {
  if (closing_ || closed_)
    return;
  closing_ = true;
  closing_reason_ = req.reason;
  if (!req.flush_queued)
    queue_.drop_pending();
  // Give the final bytes (and a WebSocket client's close answer) a short
  // chance; a client that does not read gets closed when the grace ends.
  grace_timer_.expires_after(req.grace);
  grace_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (!ec)
      self->finish(self->closing_reason_);
  });
  push_final(req); // may write at once, and finish
  if (closed_)
    return;
  if (queue_.empty()) {
    on_final_written();
    return;
  }
  if (!queue_.writing())
    do_write();
}

void stream_session::do_write() {
  // Most writes fit the socket's send buffer at once: write them here, with
  // one non-blocking writev and no asynchronous operation (no handler to
  // allocate, queue and run per delivery, no write timer). Only what the
  // socket does not take goes through async_write, with the write timeout.
  for (int rounds = 0; rounds < 4 && !queue_.empty() && !closed_; ++rounds) {
    views_.clear();
    write_items_ = queue_.begin_write(views_, max_items_per_write, max_bytes_per_write);
    buffers_.clear();
    std::size_t total = 0;
    for (auto v : views_) {
      buffers_.emplace_back(v.data(), v.size());
      total += v.size();
    }
    write_started_ = std::chrono::steady_clock::now();
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
    if (n < total) {
      // The rest when the socket can take it.
      std::size_t skip = n;
      std::size_t first = 0;
      while (skip >= buffers_[first].size()) {
        skip -= buffers_[first].size();
        ++first;
      }
      buffers_.erase(buffers_.begin(), buffers_.begin() + static_cast<std::ptrdiff_t>(first));
      buffers_.front() += skip;
      arm_write_timer();
      asio::async_write(socket_, buffers_,
                        [self = shared_from_this(), n](beast::error_code ec2, std::size_t rest) {
                          self->on_write(ec2, n + rest);
                        });
      return;
    }
    if (!written(total))
      return;
  }
  if (!queue_.empty() && !closed_) {
    // A long queue: let the shard's other sessions run before the rest.
    asio::post(socket_.get_executor(), [self = shared_from_this()] {
      if (!self->closed_ && !self->queue_.writing() && !self->queue_.empty())
        self->do_write();
    });
  }
}

bool stream_session::written(std::size_t bytes) {
  metrics::written(kind_, write_items_, bytes);
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
  if (written(bytes) && !queue_.empty())
    do_write();
}

void stream_session::arm_write_timer() {
  if (write_timer_armed_)
    return;
  write_timer_armed_ = true;
  write_timer_.expires_at(write_started_ + opts_.write_timeout);
  write_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    self->write_timer_armed_ = false;
    if (ec || self->closed_ || !self->queue_.writing())
      return;
    // The write in flight may have started after the timer was armed.
    if (std::chrono::steady_clock::now() - self->write_started_ < self->opts_.write_timeout) {
      self->arm_write_timer();
      return;
    }
    self->finish(close_reason::write_timeout);
  });
}

void stream_session::finish(close_reason reason) {
  if (closed_)
    return;
  closed_ = true;
  beast::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  grace_timer_.cancel();
  write_timer_.cancel();
  subscribe_timer_.cancel();
  on_finished();
  if (auto ev = std::move(events_))
    ev->on_closed(reason);
}

} // namespace herald::net
