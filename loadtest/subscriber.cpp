#include "loadtest/subscriber.hpp"

#include "loadtest/clock.hpp"
#include "loadtest/http_head.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <nlohmann/json.hpp>

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
                                  key));
  }
  arm_read();
}

std::string subscriber::sse_request() const {
  std::string r = "GET /v1/sse?";
  for (std::size_t i = 0; i < tracks_.size(); ++i) {
    if (i)
      r += '&';
    r += "channel=";
    r += ctx_.channel_names[static_cast<std::size_t>(tracks_[i].id)];
  }
  r += " HTTP/1.1\r\nHost: ";
  r += spec_.host;
  r += "\r\nAccept: text/event-stream\r\n";
  if (resume_ && !sse_.last_event_id().empty()) {
    r += "Last-Event-ID: ";
    r += sse_.last_event_id();
    r += "\r\n";
  }
  r += "\r\n";
  return r;
}

std::string subscriber::ws_subscribe(const track& t, std::size_t request_id) const {
  std::string m = R"({"op":"subscribe","id":)";
  m += std::to_string(request_id);
  m += R"(,"channel":")";
  m += ctx_.channel_names[static_cast<std::size_t>(t.id)];
  m += '"';
  if (resume_ && !t.epoch.empty()) {
    m += R"(,"since":{"epoch":")";
    m += t.epoch;
    m += R"(","offset":)";
    m += std::to_string(t.last_offset);
    m += '}';
  }
  m += '}';
  return m;
}

std::string subscriber::centrifugo_commands() const {
  std::string m = R"({"id":1,"connect":{"name":"herald-loadtest"}})";
  for (std::size_t i = 0; i < tracks_.size(); ++i) {
    const auto& t = tracks_[i];
    m += R"(
{"id":)";
    m += std::to_string(i + 2);
    m += R"(,"subscribe":{"channel":")";
    m += ctx_.channel_names[static_cast<std::size_t>(t.id)];
    m += '"';
    if (resume_ && !t.epoch.empty()) {
      m += R"(,"recover":true,"epoch":")";
      m += t.epoch;
      m += R"(","offset":)";
      m += std::to_string(t.last_offset);
    }
    m += "}}";
  }
  return m;
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
  state_ = state::subscribing;
  std::string frames;
  if (spec_.kind == transport::centrifugo) {
    ws::append_client_frame(frames, ws::opcode::text, centrifugo_commands(),
                            static_cast<std::uint32_t>(ctx_.rng()));
    send(frames);
    return;
  }
  if (spec_.kind == transport::centrifugo_protobuf) {
    ws::append_client_frame(frames, ws::opcode::binary, centrifugo_protobuf_commands(),
                            static_cast<std::uint32_t>(ctx_.rng()));
    send(frames);
    return;
  }
  for (std::size_t i = 0; i < tracks_.size(); ++i)
    ws::append_client_frame(frames, ws::opcode::text, ws_subscribe(tracks_[i], i + 1),
                            static_cast<std::uint32_t>(ctx_.rng()));
  send(frames);
}

void subscriber::established(std::int64_t now) {
  state_ = state::established;
  if (ctx_.events)
    ctx_.events->on_established(*this, resume_, now - started_ns_);
}

void subscriber::update_from_cursor(std::string_view cursor) {
  for_each_cursor_entry(cursor, [&](const cursor_entry& e) {
    for (auto& t : tracks_) {
      if (ctx_.channel_hashes[static_cast<std::size_t>(t.id)] != e.hash)
        continue;
      if (!t.offset_known || e.offset != t.last_offset) {
        t.last_offset = e.offset;
        t.seen_mask = 1;
        t.offset_known = true;
      }
    }
  });
}

void subscriber::on_sse_event(const sse_event& ev, std::int64_t now) {
  if (ev.event.substr(0, 7) == "herald.") {
    if (ev.event == "herald.gap") {
      ++ctx_.counters.gap_notices;
      auto r = ev.data.find("\"reason\":\"");
      std::string reason = "unknown";
      if (r != std::string_view::npos) {
        auto v = ev.data.substr(r + 10);
        reason = std::string{v.substr(0, v.find('"'))};
      }
      ++ctx_.notices["sse herald.gap " + reason];
      // A gap moves the positions the server holds for us.
      update_from_cursor(ev.id);
    }
    return;
  }
  pub_fields f;
  if (!scan_pub_fields(ev.data, f)) {
    ++ctx_.counters.unparsed;
    return;
  }
  // Positions in the cursor, per track.
  std::uint64_t cur_off[8] = {};
  bool present[8] = {};
  for_each_cursor_entry(ev.id, [&](const cursor_entry& e) {
    for (std::size_t i = 0; i < tracks_.size() && i < 8; ++i)
      if (ctx_.channel_hashes[static_cast<std::size_t>(tracks_[i].id)] == e.hash) {
        cur_off[i] = e.offset;
        present[i] = true;
      }
  });
  // The publication lists its channels; when it concerns several of ours,
  // the cursor entry that moved tells which one this delivery is for.
  std::size_t cand[8];
  std::size_t nc = 0;
  for (std::size_t i = 0; i < tracks_.size() && i < 8; ++i)
    if (f.lists(tracks_[i].id))
      cand[nc++] = i;
  if (nc == 0) // a server that ignores channels (the baseline): the first one
    cand[nc++] = 0;
  std::size_t chosen = cand[0];
  if (nc > 1) {
    bool found = false;
    for (std::size_t k = 0; k < nc && !found; ++k) {
      auto& t = tracks_[cand[k]];
      if (present[cand[k]] && t.offset_known && cur_off[cand[k]] > t.last_offset) {
        chosen = cand[k];
        found = true;
      }
    }
    for (std::size_t k = 0; k < nc && !found; ++k)
      if (!tracks_[cand[k]].offset_known) {
        chosen = cand[k];
        found = true;
      }
  }
  on_publication(tracks_[chosen], present[chosen], cur_off[chosen], f, now);
}

void subscriber::on_ws_message(ws::opcode op, std::string_view payload, std::int64_t now) {
  switch (op) {
  case ws::opcode::text: {
    std::string_view channel;
    std::uint64_t offset = 0;
    if (spec_.kind == transport::centrifugo) {
      if (!scan_centrifugo_publication(payload, channel, offset)) {
        on_centrifugo_control(payload, now);
        return;
      }
    } else if (!scan_ws_publication(payload, channel, offset)) {
      on_ws_control(payload);
      return;
    }
    track* t = nullptr;
    for (auto& tr : tracks_)
      if (ctx_.channel_names[static_cast<std::size_t>(tr.id)] == channel)
        t = &tr;
    pub_fields f;
    if (t == nullptr || !scan_pub_fields(payload, f)) {
      ++ctx_.counters.unparsed;
      return;
    }
    on_publication(*t, true, offset, f, now);
    return;
  }
  case ws::opcode::binary:
    if (spec_.kind == transport::centrifugo_protobuf)
      on_protobuf_message(payload, now);
    else
      ++ctx_.counters.unparsed;
    return;
  case ws::opcode::ping: {
    std::string frame;
    ws::append_client_frame(frame, ws::opcode::pong, payload,
                            static_cast<std::uint32_t>(ctx_.rng()));
    send(frame);
    return;
  }
  case ws::opcode::close: {
    std::string frame;
    ws::append_client_frame(frame, ws::opcode::close, payload.substr(0, 2),
                            static_cast<std::uint32_t>(ctx_.rng()));
    send(frame);
    unsigned code =
      payload.size() >= 2
        ? (static_cast<unsigned char>(payload[0]) << 8 | static_cast<unsigned char>(payload[1]))
        : 1005;
    ++ctx_.notices["ws close " + std::to_string(code)];
    if (state_ == state::established)
      deferred_drop_ = true;
    deferred_ = "websocket: close " + std::to_string(code);
    return;
  }
  case ws::opcode::pong:
    return;
  default:
    deferred_ = "websocket: unexpected binary message";
    return;
  }
}

void subscriber::on_ws_control(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("op") || !j["op"].is_string()) {
    ++ctx_.counters.unparsed;
    return;
  }
  const auto& op = j["op"].get_ref<const std::string&>();
  std::string channel = j.value("channel", std::string{});
  track* t = nullptr;
  for (auto& tr : tracks_)
    if (ctx_.channel_names[static_cast<std::size_t>(tr.id)] == channel)
      t = &tr;
  if (op == "subscribed") {
    if (t == nullptr || t->subscribed)
      return;
    t->subscribed = true;
    bool recovered = j.value("recovered", false);
    std::string epoch = j.value("epoch", std::string{});
    auto head = j.value("offset", std::uint64_t{0});
    bool asked = resume_ && !t->epoch.empty();
    if (asked && !recovered) {
      ++ctx_.counters.gap_notices;
      ++ctx_.notices["ws subscribed recovered=false " + j.value("reason", std::string{"?"})];
    }
    if (!asked || !recovered || epoch != t->epoch) {
      // Live from the head: the next publication has offset head + 1.
      t->epoch = std::move(epoch);
      t->last_offset = head;
      t->seen_mask = 1;
      t->offset_known = true;
    }
    if (state_ == state::subscribing) {
      bool all = true;
      for (const auto& tr : tracks_)
        all = all && tr.subscribed;
      if (all)
        established(mono_ns());
    }
  } else if (op == "gap") {
    ++ctx_.counters.gap_notices;
    ++ctx_.notices["ws gap " + j.value("reason", std::string{"?"})];
  } else if (op == "error") {
    std::string code = j.value("code", std::string{"?"});
    ++ctx_.notices["ws error " + code];
    if (state_ != state::established)
      deferred_ = "websocket: error " + code;
  }
}

void subscriber::on_centrifugo_control(std::string_view text, std::int64_t now) {
  if (text == "{}") {
    // The server's application ping: answer it (the connect reply says pong).
    std::string frame;
    ws::append_client_frame(frame, ws::opcode::text, "{}", static_cast<std::uint32_t>(ctx_.rng()));
    send(frame);
    return;
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) {
    ++ctx_.counters.unparsed;
    return;
  }
  on_centrifugo_reply(j, now);
}

void subscriber::on_centrifugo_reply(const nlohmann::json& j, std::int64_t now) {
  if (auto e = j.find("error"); e != j.end() && e->is_object()) {
    auto code = std::to_string(e->value("code", 0));
    ++ctx_.notices["centrifugo error " + code];
    if (state_ != state::established)
      deferred_ = "centrifugo: error " + code;
    return;
  }
  if (auto p = j.find("push"); p != j.end() && p->is_object()) {
    if (p->contains("unsubscribe")) {
      // A live gap: resubscribing is left to the SDKs; counted here.
      ++ctx_.counters.gap_notices;
      ++ctx_.notices["centrifugo unsubscribe push"];
    }
    return;
  }
  auto s = j.find("subscribe");
  auto id = j.value("id", std::uint64_t{0});
  if (s == j.end() || !s->is_object() || id < 2 || id - 2 >= tracks_.size())
    return; // the connect reply, or something this client does not use
  track& t = tracks_[static_cast<std::size_t>(id - 2)];
  if (t.subscribed)
    return;
  t.subscribed = true;
  bool recovered = s->value("recovered", false);
  std::string epoch = s->value("epoch", std::string{});
  auto head = s->value("offset", std::uint64_t{0});
  bool asked = resume_ && !t.epoch.empty();
  if (asked && !recovered) {
    ++ctx_.counters.gap_notices;
    ++ctx_.notices["centrifugo subscribed recovered=false"];
  }
  if (!asked || !recovered || epoch != t.epoch) {
    t.epoch = std::move(epoch);
    t.last_offset = head;
    t.seen_mask = 1;
    t.offset_known = true;
  }
  // The recovered publications travel inside the reply.
  if (auto pubs = s->find("publications"); pubs != s->end() && pubs->is_array()) {
    for (const auto& pj : *pubs) {
      auto text_pub = pj.dump();
      pub_fields f;
      if (!scan_pub_fields(text_pub, f)) {
        ++ctx_.counters.unparsed;
        continue;
      }
      on_publication(t, true, pj.value("offset", std::uint64_t{0}), f, now);
    }
  }
  if (state_ == state::subscribing) {
    bool all = true;
    for (const auto& tr : tracks_)
      all = all && tr.subscribed;
    if (all)
      established(mono_ns());
  }
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

  bool dup = false;
  bool late = false;
  if (has_offset && t.offset_known) {
    if (offset > t.last_offset) {
      auto d = offset - t.last_offset;
      if (d > 1)
        c.offset_gaps += d - 1;
      t.seen_mask = d >= 64 ? 1 : (t.seen_mask << d) | 1;
      t.last_offset = offset;
      if (t.seq_known && f.seq < t.last_seq)
        late = true; // offsets advance but the publisher sent it earlier
    } else {
      auto d = t.last_offset - offset;
      if (d < 64 && (t.seen_mask >> d) & 1u) {
        dup = true;
      } else {
        late = true;
        if (d < 64)
          t.seen_mask |= std::uint64_t{1} << d;
        if (c.offset_gaps > 0)
          --c.offset_gaps; // it fills a gap counted earlier
      }
    }
  } else if (has_offset) {
    t.last_offset = offset;
    t.seen_mask = 1;
    t.offset_known = true;
  } else if (t.seq_known) {
    // No offsets (a server without cursors): the sequence number decides.
    if (f.seq == t.last_seq)
      dup = true;
    else if (f.seq < t.last_seq)
      late = true;
  }
  if (dup)
    ++c.duplicates;
  else if (late)
    ++c.out_of_order;
  if (!t.seq_known || f.seq > t.last_seq)
    t.last_seq = f.seq;
  t.seq_known = true;
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
