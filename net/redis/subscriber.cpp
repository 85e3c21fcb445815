#include "net/redis/subscriber.hpp"

#include "net/redis/slot.hpp"

#include <hiredis/hiredis.h>

#include <map>

namespace herald::net::redis {

namespace {

// One RESP command, formatted by hiredis (binary-safe).
std::string format_command(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  argv.reserve(args.size());
  lens.reserve(args.size());
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  char* out = nullptr;
  int n = redisFormatCommandArgv(&out, static_cast<int>(args.size()), argv.data(), lens.data());
  std::string s;
  if (n > 0 && out != nullptr)
    s.assign(out, static_cast<std::size_t>(n));
  if (out != nullptr)
    redisFreeCommand(out);
  return s;
}

std::string millis(std::chrono::milliseconds d) {
  return std::to_string(d.count()) + " ms";
}

} // namespace

std::shared_ptr<subscriber> subscriber::create(executor_type executor, connection_options options,
                                               pubsub_mode mode) {
  return std::shared_ptr<subscriber>(new subscriber(std::move(executor), std::move(options), mode));
}

subscriber::subscriber(executor_type executor, connection_options options, pubsub_mode mode)
  : executor_(executor),
    options_(std::move(options)),
    mode_(mode),
    words_(mode == pubsub_mode::sharded
             ? words{"SSUBSCRIBE", "SUNSUBSCRIBE", "ssubscribe", "sunsubscribe", "smessage"}
             : words{"SUBSCRIBE", "UNSUBSCRIBE", "subscribe", "unsubscribe", "message"}),
    socket_(executor),
    resolver_(executor),
    retry_timer_(executor),
    connect_timer_(executor),
    ping_timer_(executor),
    backoff_(options_.min_backoff, options_.max_backoff) {}

subscriber::~subscriber() {
  if (reader_ != nullptr)
    redisReaderFree(reader_);
}

// -- connection -----------------------------------------------------------------

void subscriber::start() {
  if (started_ || stopped_)
    return;
  started_ = true;
  connect();
}

void subscriber::stop() {
  if (stopped_)
    return;
  stopped_ = true;
  close_connection();
  retry_timer_.cancel();
  channels_.disconnected();
  up_ = false;
  ready_ = false;
}

void subscriber::close_connection() {
  ++gen_;
  ++ping_gen_;
  boost::system::error_code ignored;
  resolver_.cancel();
  socket_.close(ignored);
  connect_timer_.cancel();
  ping_timer_.cancel();
  socket_open_ = false;
  ping_outstanding_ = false;
  pending_.clear();
  outbuf_.clear();
}

void subscriber::connect() {
  if (stopped_)
    return;
  auto g = ++gen_;
  ++counters_.connect_attempts;
  std::weak_ptr<subscriber> weak = shared_from_this();
  if (options_.connect_timeout.count() > 0) {
    connect_timer_.expires_after(options_.connect_timeout);
    connect_timer_.async_wait([weak, g](boost::system::error_code ec) {
      auto s = weak.lock();
      if (ec || !s || s->gen_ != g || s->ready_)
        return;
      s->drop("connect timeout after " + millis(s->options_.connect_timeout));
    });
  }
  resolver_.async_resolve(
    options_.target.host, std::to_string(options_.target.port),
    [weak, g](boost::system::error_code ec, tcp::resolver::results_type results) {
      auto s = weak.lock();
      if (!s || s->gen_ != g)
        return;
      if (ec) {
        s->drop("resolve " + s->options_.target.host + ": " + ec.message());
        return;
      }
      asio::async_connect(s->socket_, results,
                          [weak, g](boost::system::error_code ec2, const tcp::endpoint&) {
                            auto s2 = weak.lock();
                            if (!s2 || s2->gen_ != g)
                              return;
                            if (ec2) {
                              s2->drop("connect: " + ec2.message());
                              return;
                            }
                            s2->on_connected();
                          });
    });
}

void subscriber::on_connected() {
  socket_open_ = true;
  boost::system::error_code ignored;
  socket_.set_option(tcp::no_delay(true), ignored);
  socket_.set_option(asio::socket_base::keep_alive(true), ignored);
  if (reader_ != nullptr)
    redisReaderFree(reader_);
  reader_ = redisReaderCreate();
  pending_.clear();
  outbuf_.clear(); // writing_ belongs to a dropped connection's write until its handler runs
  handshake_left_ = 0;
  const auto& t = options_.target;
  if (!t.password.empty()) {
    if (t.username.empty())
      send({"AUTH", t.password}, {pending::handshake, "AUTH", {}, 0});
    else
      send({"AUTH", t.username, t.password}, {pending::handshake, "AUTH", {}, 0});
    ++handshake_left_;
  }
  if (!options_.client_name.empty()) {
    send({"CLIENT", "SETNAME", options_.client_name},
         {pending::handshake, "CLIENT SETNAME", {}, 0});
    ++handshake_left_;
  }
  // At least one round trip: "connected" means the server answers (a
  // frozen server accepts TCP connections all the same).
  if (handshake_left_ == 0) {
    send({"PING"}, {pending::handshake, "PING", {}, 0});
    ++handshake_left_;
  }
  write_more();
  read();
}

void subscriber::handshake_done() {
  ready_ = true;
  connect_timer_.cancel();
  ++counters_.connects;
  if (counters_.connects > 1)
    ++counters_.reconnects;
  backoff_.up(std::chrono::steady_clock::now());
  last_error_.clear();
  channels_.connected(); // the whole wanted set, now
  flush();
  if (options_.heartbeat_interval.count() > 0)
    arm_ping(options_.heartbeat_interval);
  check_up();
}

void subscriber::read() {
  std::weak_ptr<subscriber> weak = shared_from_this();
  socket_.async_read_some(
    asio::buffer(inbuf_), [weak, g = gen_](boost::system::error_code ec, std::size_t n) {
      auto s = weak.lock();
      if (!s || s->gen_ != g)
        return;
      if (ec) {
        s->drop(ec == asio::error::eof ? std::string("connection closed by the server")
                                       : "read: " + ec.message());
        return;
      }
      if (redisReaderFeed(s->reader_, s->inbuf_.data(), n) != REDIS_OK) {
        s->drop("protocol error");
        return;
      }
      for (;;) {
        void* raw = nullptr;
        if (redisReaderGetReply(s->reader_, &raw) != REDIS_OK) {
          s->drop(std::string("protocol error: ") + s->reader_->errstr);
          return;
        }
        if (raw == nullptr)
          break;
        auto r = copy_reply(*static_cast<redisReply*>(raw));
        freeReplyObject(raw);
        s->on_reply(std::move(r));
        if (s->gen_ != g)
          return; // dropped or stopped by the reply or a callback
      }
      s->read();
    });
}

// Closes the connection (if any) and schedules the next attempt. Reports
// on_down when it was up, else on_attempt_failed.
void subscriber::drop(const std::string& reason) {
  if (stopped_)
    return;
  close_connection();
  bool was_up = up_;
  std::string why = reason;
  // Lost while resubscribing: name the command that never completed
  // (unless the reason already does: a refused SUBSCRIBE).
  auto unsettled = channels_.unsettled();
  if (!was_up && ready_ && !unsettled.empty() && why.rfind(words_.subscribe, 0) != 0)
    why = naming(unsettled) + " failed: " + why;
  channels_.disconnected();
  if (ready_)
    backoff_.lost(std::chrono::steady_clock::now());
  up_ = false;
  ready_ = false;
  last_error_ = why;
  if (!was_up)
    ++counters_.connect_failures;
  schedule_reconnect();
  report_loss(was_up, why, on_down, on_attempt_failed); // last: may call stop()
}

void subscriber::schedule_reconnect() {
  retry_timer_.expires_after(backoff_.next());
  retry_timer_.async_wait(
    [weak = std::weak_ptr<subscriber>(shared_from_this()), g = gen_](boost::system::error_code ec) {
      auto s = weak.lock();
      if (ec || !s || s->gen_ != g)
        return;
      s->connect();
    });
}

// -- writing --------------------------------------------------------------------

void subscriber::send(const std::vector<std::string>& args, pending p) {
  outbuf_ += format_command(args);
  pending_.push_back(std::move(p));
}

void subscriber::write_more() {
  if (!writing_.empty() || outbuf_.empty() || !socket_open_)
    return;
  writing_.swap(outbuf_);
  ++counters_.writes;
  asio::async_write(socket_, asio::buffer(writing_),
                    [weak = std::weak_ptr<subscriber>(shared_from_this()),
                     g = gen_](boost::system::error_code ec, std::size_t) {
                      auto s = weak.lock();
                      if (!s)
                        return;
                      s->writing_.clear();
                      if (s->gen_ != g) {
                        s->write_more(); // a newer connection may have queued bytes
                        return;
                      }
                      if (ec) {
                        s->drop("write: " + ec.message());
                        return;
                      }
                      s->write_more();
                    });
}

// -- replies --------------------------------------------------------------------

void subscriber::on_reply(reply r) {
  if (r.type == reply::error) {
    on_error_reply(r.str);
    return;
  }
  if (r.type == reply::array && r.elements.size() >= 2 && r.elements[0].type == reply::string) {
    const auto& kind = r.elements[0].str;
    const auto& channel = r.elements[1].str;
    if (kind == words_.message && r.elements.size() >= 3) {
      if (!channels_.wanted(channel))
        return; // unsubscribed meanwhile
      ++counters_.messages;
      if (on_message)
        on_message(channel, std::move(r.elements[2].str));
      return;
    }
    if (kind == words_.subscribed) {
      on_subscribe_confirmed(channel);
      return;
    }
    if (kind == words_.unsubscribed) {
      on_unsubscribe_confirmed(channel);
      return;
    }
    if (kind == "pong") { // PING in subscribed mode
      if (!pending_.empty() && pending_.front().kind == pending::ping)
        pending_.pop_front();
      on_pong();
    }
    return;
  }
  // A plain reply: the handshake, or +PONG outside subscribed mode.
  if (pending_.empty())
    return;
  if (pending_.front().kind == pending::ping) {
    pending_.pop_front();
    on_pong();
    return;
  }
  if (pending_.front().kind != pending::handshake) {
    drop("unexpected reply " + r.to_string());
    return;
  }
  pending_.pop_front();
  if (--handshake_left_ == 0)
    handshake_done();
}

void subscriber::on_subscribe_confirmed(const std::string& channel) {
  if (pending_.empty() || pending_.front().kind != pending::subscribe ||
      pending_.front().channels[pending_.front().got] != channel) {
    drop(std::string("unexpected ") + words_.subscribed + " confirmation for " + channel);
    return;
  }
  if (++pending_.front().got == pending_.front().channels.size())
    pending_.pop_front();
  auto g = gen_;
  if (channels_.on_subscribed(channel) && on_subscribed)
    on_subscribed(channel);
  if (gen_ != g || stopped_)
    return;
  schedule_flush(); // one no longer wanted is unsubscribed now
  check_up();
}

void subscriber::on_unsubscribe_confirmed(const std::string& channel) {
  if (!pending_.empty() && pending_.front().kind == pending::unsubscribe &&
      pending_.front().channels[pending_.front().got] == channel) {
    if (++pending_.front().got == pending_.front().channels.size())
      pending_.pop_front();
    channels_.on_unsubscribed(channel);
    schedule_flush(); // one wanted again is subscribed now
    return;
  }
  // Not asked for: the node no longer serves the channel's slot (sharded).
  if (channels_.on_dropped(channel))
    report_lost(channel, {});
}

void subscriber::on_error_reply(const std::string& text) {
  if (pending_.empty()) {
    drop("unexpected error reply: " + text);
    return;
  }
  auto p = std::move(pending_.front());
  pending_.pop_front();
  switch (p.kind) {
  case pending::handshake:
    drop(p.name + " failed: " + text);
    return;
  case pending::ping:
    on_pong(); // an answer all the same: the server is alive
    return;
  case pending::unsubscribe:
    drop(std::string(words_.unsubscribe) + " failed: " + text);
    return;
  case pending::subscribe: {
    // None of the command's channels is subscribed: one command, one answer.
    std::vector<std::string> refused(p.channels.begin() + static_cast<std::ptrdiff_t>(p.got),
                                     p.channels.end());
    if (mode_ == pubsub_mode::classic) {
      // No other node could take them (an ACL refusal, NOPERM): not up.
      drop(naming(refused) + " failed: " + text);
      return;
    }
    auto g = gen_;
    for (const auto& channel : refused)
      if (channels_.on_refused(channel)) {
        report_lost(channel, text);
        if (gen_ != g || stopped_)
          return;
      }
    check_up();
    return;
  }
  }
}

void subscriber::report_lost(const std::string& channel, const std::string& error) {
  ++counters_.lost;
  if (on_lost)
    on_lost(channel, error);
}

void subscriber::check_up() {
  if (up_ || stopped_ || !ready_ || !channels_.settled())
    return;
  up_ = true;
  ++counters_.ups;
  if (on_up)
    on_up();
}

std::string subscriber::naming(const std::vector<std::string>& channels) const {
  std::string out = std::string(words_.subscribe) + " of " + (channels.empty() ? "" : channels[0]);
  if (channels.size() > 1)
    out += " and " + std::to_string(channels.size() - 1) + " other channel(s)";
  return out;
}

// -- liveness -------------------------------------------------------------------

void subscriber::arm_ping(std::chrono::milliseconds after) {
  if (options_.heartbeat_interval.count() <= 0 || stopped_ || !ready_)
    return;
  ping_timer_.expires_after(after);
  ping_timer_.async_wait([weak = std::weak_ptr<subscriber>(shared_from_this()),
                          g = ++ping_gen_](boost::system::error_code ec) {
    auto s = weak.lock();
    if (ec || !s || s->ping_gen_ != g)
      return;
    s->on_ping_timer();
  });
}

void subscriber::on_pong() {
  ping_outstanding_ = false;
  arm_ping(options_.heartbeat_interval);
}

void subscriber::on_ping_timer() {
  if (stopped_ || !ready_)
    return;
  if (ping_outstanding_) {
    ++counters_.ping_timeouts;
    drop("heartbeat timeout: no PONG within " + millis(options_.heartbeat_timeout));
    return;
  }
  ping_outstanding_ = true;
  ++counters_.pings;
  send({"PING"}, {pending::ping, {}, {}, 0});
  write_more();
  arm_ping(options_.heartbeat_timeout);
}

// -- batching -------------------------------------------------------------------

void subscriber::subscribe(const std::vector<std::string>& channels) {
  for (const auto& channel : channels)
    channels_.want(channel);
  schedule_flush();
}

void subscriber::unsubscribe(const std::vector<std::string>& channels) {
  for (const auto& channel : channels)
    channels_.unwant(channel);
  schedule_flush();
  check_up(); // the resubscription may have waited for these only
}

void subscriber::schedule_flush() {
  if (flush_posted_ || stopped_ || !channels_.has_changes())
    return;
  flush_posted_ = true;
  asio::post(executor_, [weak = std::weak_ptr<subscriber>(shared_from_this())] {
    if (auto s = weak.lock()) {
      s->flush_posted_ = false;
      s->flush();
    }
  });
}

void subscriber::flush() {
  if (!ready_ || stopped_)
    return;
  auto changes = channels_.take_changes();
  if (changes.empty())
    return;
  // Classic: one command each. Sharded: every channel of one SSUBSCRIBE
  // must hash to one slot on a cluster, so one command per slot.
  std::map<std::uint16_t, std::vector<std::string>> subs, unsubs;
  auto slot_of = [this](const std::string& channel) -> std::uint16_t {
    return mode_ == pubsub_mode::sharded ? key_slot(channel) : 0;
  };
  for (auto& channel : changes.unsubscribe)
    unsubs[slot_of(channel)].push_back(std::move(channel));
  for (auto& channel : changes.subscribe)
    subs[slot_of(channel)].push_back(std::move(channel));
  for (auto& [slot, chans] : unsubs) {
    std::vector<std::string> args{words_.unsubscribe};
    args.insert(args.end(), chans.begin(), chans.end());
    ++counters_.unsubscribe_commands;
    send(args, {pending::unsubscribe, {}, std::move(chans), 0});
  }
  for (auto& [slot, chans] : subs) {
    std::vector<std::string> args{words_.subscribe};
    args.insert(args.end(), chans.begin(), chans.end());
    ++counters_.subscribe_commands;
    send(args, {pending::subscribe, {}, std::move(chans), 0});
  }
  write_more(); // the whole batch in one write
}

} // namespace herald::net::redis
