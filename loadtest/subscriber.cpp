// The connection side of a subscriber: the socket (bound to its source
// address), the handshake for every transport, the readiness-driven read
// loop over the worker's shared buffer, the write queue, errors, timeouts,
// and what every delivery goes through (counters, latency, the track's
// checks). The transports' parsing lives in subscriber_sse.cpp,
// subscriber_ws.cpp, subscriber_centrifugo.cpp and centrifugo_protobuf.cpp.
#include "loadtest/subscriber.hpp"

#include "loadtest/clock.hpp"
#include "loadtest/http_head.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <netinet/in.h>
#include <sys/socket.h>

namespace herald::loadtest {

namespace {
// Largest handshake answer accepted.
constexpr std::size_t max_head_bytes = 16 * 1024;
// Full buffers read per readiness event before yielding to other sockets.
constexpr int max_reads_per_wakeup = 16;
} // namespace

subscriber::subscriber(subscriber_context& ctx, subscriber_spec spec)
  : ctx_(ctx),
    spec_(std::move(spec)),
    socket_(ctx.ioc) {
  tracks_.reserve(spec_.channels.size());
  for (int id : spec_.channels) {
    track t;
    t.id = id;
    tracks_.push_back(std::move(t));
  }
  spec_.channels.clear();
  spec_.channels.shrink_to_fit();
}

bool subscriber::has_position() const noexcept {
  if (spec_.kind == transport::sse)
    return !sse_.last_event_id().empty();
  for (const auto& t : tracks_)
    if (t.epoch.empty())
      return false;
  return true;
}

void subscriber::start(bool resume) {
  close_socket();
  resume_ = resume;
  state_ = state::connecting;
  started_ns_ = mono_ns();
  sse_.reset_stream();
  ws_.reset();
  head_.clear();
  out_.clear();
  deferred_.clear();
  deferred_drop_ = false;
  writing_ = false;
  for (auto& t : tracks_)
    t.subscribed = false;

  boost::system::error_code ec;
  socket_.open(tcp::v4(), ec);
  if (ec) {
    fail("socket: " + ec.message());
    return;
  }
  socket_.non_blocking(true, ec);
  // Let connect() pick the port for the whole 4-tuple, so each source
  // address has the full ephemeral range towards each target.
  int one = 1;
  ::setsockopt(socket_.native_handle(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
  if (spec_.slow) {
    // A slow client with a small receive window (no autotuning): the
    // server's own queue fills after ~1 MiB instead of after the several
    // MiB loopback buffers would otherwise absorb.
    int small = 4096;
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  }
  socket_.bind(tcp::endpoint(spec_.source, 0), ec);
  if (ec) {
    fail("bind " + spec_.source.to_string() + ": " + ec.message());
    return;
  }
  socket_.async_connect(spec_.target, [this, g = gen_](const boost::system::error_code& e) {
    if (g == gen_)
      on_connect(e);
  });
}

void subscriber::on_connect(const boost::system::error_code& ec) {
  if (ec) {
    fail("connect: " + ec.message());
    return;
  }
  state_ = state::handshake;
  if (spec_.kind == transport::sse) {
    send(sse_request());
  } else {
    auto key = ws::make_key(ctx_.rng(), ctx_.rng());
    ws_accept_ = ws::accept_for_key(key);
    send(ws::make_upgrade_request(spec_.host,
                                  spec_.kind == transport::centrifugo ? "/connection/websocket"
                                  : spec_.kind == transport::centrifugo_protobuf
                                    ? "/connection/websocket?format=protobuf"
                                    : "/v1/ws",
                                  key, spec_.deflate));
  }
  arm_read();
}

void subscriber::arm_read() {
  socket_.async_wait(tcp::socket::wait_read, [this, g = gen_](const boost::system::error_code& ec) {
    if (g != gen_)
      return;
    if (ec) {
      if (ec != asio::error::operation_aborted)
        on_io_error(ec, "wait");
      return;
    }
    on_readable();
  });
}

void subscriber::on_readable() {
  auto now = mono_ns();
  auto g = gen_;
  for (int i = 0; i < max_reads_per_wakeup; ++i) {
    boost::system::error_code ec;
    std::size_t n = socket_.read_some(asio::buffer(ctx_.buf), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      arm_read();
      return;
    }
    if (ec) {
      on_io_error(ec, "read");
      return;
    }
    on_bytes(ctx_.buf.data(), n, now);
    if (g != gen_ || (state_ != state::handshake && state_ != state::subscribing &&
                      state_ != state::established))
      return;
    if (!deferred_.empty() || deferred_drop_) {
      auto why = std::move(deferred_);
      if (deferred_drop_) {
        close_socket();
        state_ = state::closed;
        if (ctx_.events)
          ctx_.events->on_dropped(*this, why.empty() ? std::string{"closed by server"} : why);
      } else {
        fail(why);
      }
      return;
    }
    if (spec_.slow && state_ == state::established)
      return; // a slow client stops reading here
    if (n < ctx_.buf.size()) {
      // Drained: with edge-triggered readiness, any later arrival wakes us.
      arm_read();
      return;
    }
  }
  // Still data after several full buffers: let other sockets run first.
  asio::post(ctx_.ioc, [this, g] {
    if (g == gen_)
      on_readable();
  });
}

void subscriber::on_bytes(const char* p, std::size_t n, std::int64_t now) {
  ctx_.counters.bytes += n;
  if (state_ == state::handshake) {
    head_.append(p, n);
    auto end = http::head_end(head_);
    if (end == std::string_view::npos) {
      if (head_.size() > max_head_bytes)
        deferred_ = "handshake: response head too large";
      return;
    }
    std::string rest = head_.substr(end);
    std::string head = std::move(head_);
    std::string().swap(head_);
    on_head(std::string_view(head).substr(0, end), now);
    if (!deferred_.empty() || rest.empty() || state_ == state::failed)
      return;
    p = rest.data();
    n = rest.size();
    // Parse the rest now, while `rest` lives.
    if (spec_.kind == transport::sse) {
      sse_.feed(p, n, [&](const sse_event& ev) { on_sse_event(ev, now); });
    } else if (!ws_.feed(p, n,
                         [&](ws::opcode op, std::string_view m) { on_ws_message(op, m, now); })) {
      deferred_ = std::string{"websocket: "} + ws_.error();
    }
    return;
  }
  if (spec_.kind == transport::sse) {
    sse_.feed(p, n, [&](const sse_event& ev) { on_sse_event(ev, now); });
  } else if (!ws_.feed(p, n,
                       [&](ws::opcode op, std::string_view m) { on_ws_message(op, m, now); })) {
    if (state_ == state::established) {
      deferred_drop_ = true;
      deferred_ = std::string{"websocket: "} + ws_.error();
    } else {
      deferred_ = std::string{"websocket: "} + ws_.error();
    }
  }
}

void subscriber::on_head(std::string_view head, std::int64_t now) {
  int status = http::status_code(head);
  if (spec_.kind == transport::sse) {
    if (status != 200) {
      deferred_ = "sse: HTTP " + std::to_string(status);
      return;
    }
    if (http::header_value(head, "Content-Type").find("text/event-stream") ==
        std::string_view::npos) {
      deferred_ = "sse: not an event stream";
      return;
    }
    established(now);
    return;
  }
  if (status != 101) {
    deferred_ = "websocket: HTTP " + std::to_string(status);
    return;
  }
  if (http::header_value(head, "Sec-WebSocket-Accept") != ws_accept_) {
    deferred_ = "websocket: bad Sec-WebSocket-Accept";
    return;
  }
  std::string().swap(ws_accept_);
  if (spec_.deflate && http::header_value(head, "Sec-WebSocket-Extensions")
                           .find("permessage-deflate") != std::string_view::npos)
    ws_.allow_deflate();
  state_ = state::subscribing;
  if (spec_.kind == transport::centrifugo) {
    send_frame(ws::opcode::text, centrifugo_commands());
    return;
  }
  if (spec_.kind == transport::centrifugo_protobuf) {
    send_frame(ws::opcode::binary, centrifugo_protobuf_commands());
    return;
  }
  // Every subscribe in one write.
  std::string frames;
  for (std::size_t i = 0; i < tracks_.size(); ++i)
    ws::append_client_frame(frames, ws::opcode::text, ws_subscribe(tracks_[i], i + 1), next_mask());
  send(frames);
}

void subscriber::established(std::int64_t now) {
  state_ = state::established;
  if (ctx_.events)
    ctx_.events->on_established(*this, resume_, now - started_ns_);
}

void subscriber::established_if_all_subscribed() {
  if (state_ != state::subscribing)
    return;
  for (const auto& t : tracks_)
    if (!t.subscribed)
      return;
  established(mono_ns());
}

void subscriber::on_publication(track& t, bool has_offset, std::uint64_t offset,
                                const pub_fields& f, std::int64_t now) {
  auto& c = ctx_.counters;
  ++c.received;
  if (c.first_recv_ns == 0)
    c.first_recv_ns = now;
  c.last_recv_ns = now;
  auto sent = static_cast<std::int64_t>(f.t_ns);
  auto latency = now >= sent ? static_cast<std::uint64_t>(now - sent) : 0;
  ctx_.latency.record(latency);
  ctx_.step_latency.record(latency);
  t.check(has_offset, offset, f.seq, c);
}

subscriber::track* subscriber::find_track(std::string_view name) noexcept {
  track* found = nullptr;
  for (auto& t : tracks_)
    if (channel_name(t) == name)
      found = &t;
  return found;
}

const std::string& subscriber::channel_name(const track& t) const noexcept {
  return ctx_.channel_names[static_cast<std::size_t>(t.id)];
}

void subscriber::send_frame(ws::opcode op, std::string_view payload) {
  std::string frame;
  ws::append_client_frame(frame, op, payload, next_mask());
  send(frame);
}

void subscriber::send(std::string_view bytes) {
  out_.append(bytes);
  if (!writing_)
    flush();
}

void subscriber::flush() {
  wbuf_.swap(out_);
  out_.clear();
  writing_ = true;
  asio::async_write(socket_, asio::buffer(wbuf_),
                    [this, g = gen_](const boost::system::error_code& ec, std::size_t) {
                      if (g != gen_)
                        return;
                      writing_ = false;
                      wbuf_.clear();
                      if (ec) {
                        on_io_error(ec, "write");
                        return;
                      }
                      if (!out_.empty()) {
                        flush();
                      } else {
                        std::string().swap(wbuf_);
                        std::string().swap(out_);
                      }
                    });
}

void subscriber::on_io_error(const boost::system::error_code& ec, const char* what) {
  std::string reason = std::string{what} + ": " + ec.message();
  if (ec == asio::error::eof)
    reason = "closed by server";
  if (in_progress()) {
    fail(reason);
    return;
  }
  if (state_ == state::established) {
    close_socket();
    state_ = state::closed;
    if (ctx_.events)
      ctx_.events->on_dropped(*this, reason);
  }
}

void subscriber::fail(const std::string& reason) {
  close_socket();
  state_ = state::failed;
  if (ctx_.events)
    ctx_.events->on_failed(*this, resume_, reason);
}

void subscriber::drop() {
  close_socket();
  state_ = state::closed;
}

void subscriber::check_timeout(std::int64_t now_ns, std::int64_t timeout_ns) {
  if (!in_progress() || now_ns - started_ns_ < timeout_ns)
    return;
  const char* where = state_ == state::connecting  ? "connect"
                      : state_ == state::handshake ? "handshake"
                                                   : "subscribe";
  fail(std::string{"timeout in "} + where);
}

bool subscriber::closed_by_server() {
  if (state_ == state::closed || state_ == state::failed)
    return true;
  if (!socket_.is_open())
    return true;
  for (;;) {
    boost::system::error_code ec;
    socket_.read_some(asio::buffer(ctx_.buf), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again)
      return false;
    if (ec)
      return true;
  }
}

void subscriber::close_socket() noexcept {
  ++gen_;
  writing_ = false;
  if (socket_.is_open()) {
    boost::system::error_code ignored;
    socket_.close(ignored);
  }
}

} // namespace herald::loadtest
