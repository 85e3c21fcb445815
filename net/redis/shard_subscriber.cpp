#include "net/redis/shard_subscriber.hpp"

#include "net/redis/slot.hpp"

#include <hiredis/hiredis.h>

#include <map>
#include <random>

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

std::chrono::milliseconds jittered(std::chrono::milliseconds d) {
  static thread_local std::mt19937 rng{std::random_device{}()};
  if (d.count() <= 1)
    return d;
  std::uniform_int_distribution<long long> dist(d.count() / 2, d.count());
  return std::chrono::milliseconds(dist(rng));
}

} // namespace

std::shared_ptr<shard_subscriber> shard_subscriber::create(executor_type executor,
                                                           connection_options options) {
  return std::shared_ptr<shard_subscriber>(
    new shard_subscriber(std::move(executor), std::move(options)));
}

shard_subscriber::shard_subscriber(executor_type executor, connection_options options)
  : executor_(executor),
    options_(std::move(options)),
    socket_(executor),
    resolver_(executor),
    retry_timer_(executor),
    connect_timer_(executor),
    ping_timer_(executor) {}

shard_subscriber::~shard_subscriber() {
  if (reader_ != nullptr)
    redisReaderFree(reader_);
}

bool shard_subscriber::confirmed(const std::string& channel) const {
  auto it = server_.find(channel);
  return it != server_.end() && it->second == channel_state::subscribed &&
         wanted_.count(channel) > 0;
}

std::size_t shard_subscriber::confirmed_count() const noexcept {
  std::size_t n = 0;
  for (const auto& [ch, st] : server_)
    if (st == channel_state::subscribed)
      ++n;
  return n;
}

// -- connection -----------------------------------------------------------------

void shard_subscriber::start() {
  if (started_ || stopped_)
    return;
  started_ = true;
  backoff_ = options_.min_backoff;
  connect();
}

void shard_subscriber::stop() {
  if (stopped_)
    return;
  stopped_ = true;
  ++gen_;
  ++ping_gen_;
  boost::system::error_code ignored;
  resolver_.cancel();
  socket_.close(ignored);
  retry_timer_.cancel();
  connect_timer_.cancel();
  ping_timer_.cancel();
  up_ = false;
  ready_ = false;
}

void shard_subscriber::connect() {
  if (stopped_)
    return;
  auto g = ++gen_;
  std::weak_ptr<shard_subscriber> weak = shared_from_this();
  if (options_.connect_timeout.count() > 0) {
    connect_timer_.expires_after(options_.connect_timeout);
    connect_timer_.async_wait([weak, g](boost::system::error_code ec) {
      auto s = weak.lock();
      if (ec || !s || s->gen_ != g || s->ready_)
        return;
      s->drop("connect timeout");
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

void shard_subscriber::on_connected() {
  socket_open_ = true;
  boost::system::error_code ignored;
  socket_.set_option(tcp::no_delay(true), ignored);
  if (reader_ != nullptr)
    redisReaderFree(reader_);
  reader_ = redisReaderCreate();
  pending_.clear();
  outbuf_.clear(); // writing_ belongs to a dropped connection's write until its handler runs
  handshake_left_ = 0;
  const auto& t = options_.target;
  if (!t.password.empty()) {
    if (t.username.empty())
      send({"AUTH", t.password}, {pending::handshake, {}, 0});
    else
      send({"AUTH", t.username, t.password}, {pending::handshake, {}, 0});
    ++handshake_left_;
  }
  if (!options_.client_name.empty()) {
    send({"CLIENT", "SETNAME", options_.client_name}, {pending::handshake, {}, 0});
    ++handshake_left_;
  }
  write_more();
  read();
  if (handshake_left_ == 0)
    on_reply(reply{reply::status, 0, "OK", {}}); // no handshake: ready at once
}

void shard_subscriber::read() {
  std::weak_ptr<shard_subscriber> weak = shared_from_this();
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

void shard_subscriber::drop(const std::string& reason) {
  if (stopped_)
    return;
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
  server_.clear();
  resubscribing_.clear();
  dirty_.clear();
  bool was_up = up_;
  if (ready_ && std::chrono::steady_clock::now() - ready_since_ >= options_.max_backoff)
    backoff_ = options_.min_backoff;
  up_ = false;
  ready_ = false;
  last_error_ = reason;
  schedule_reconnect();
  if (was_up && on_down)
    on_down(reason);
}

void shard_subscriber::schedule_reconnect() {
  retry_timer_.expires_after(jittered(backoff_));
  backoff_ = std::min(backoff_ * 2, options_.max_backoff);
  if (backoff_.count() == 0)
    backoff_ = std::chrono::milliseconds(1);
  retry_timer_.async_wait([weak = std::weak_ptr<shard_subscriber>(shared_from_this()),
                           g = gen_](boost::system::error_code ec) {
    auto s = weak.lock();
    if (ec || !s || s->gen_ != g)
      return;
    s->connect();
  });
}

// -- writing --------------------------------------------------------------------

void shard_subscriber::send(const std::vector<std::string>& args, pending p) {
  outbuf_ += format_command(args);
  pending_.push_back(std::move(p));
}

void shard_subscriber::write_more() {
  if (!writing_.empty() || outbuf_.empty() || !socket_open_)
    return;
  writing_.swap(outbuf_);
  ++counters_.writes;
  asio::async_write(socket_, asio::buffer(writing_),
                    [weak = std::weak_ptr<shard_subscriber>(shared_from_this()),
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

void shard_subscriber::on_reply(reply r) {
  if (r.type == reply::error) {
    on_error_reply(r.str);
    return;
  }
  if (r.type == reply::array && r.elements.size() >= 2 && r.elements[0].type == reply::string) {
    const auto& kind = r.elements[0].str;
    const auto& channel = r.elements[1].str;
    if (kind == "smessage" && r.elements.size() >= 3) {
      if (wanted_.count(channel) == 0)
        return; // unsubscribed meanwhile
      ++counters_.messages;
      if (on_message)
        on_message(channel, std::move(r.elements[2].str));
      return;
    }
    if (kind == "ssubscribe") {
      if (pending_.empty() || pending_.front().kind != pending::ssubscribe ||
          pending_.front().channels[pending_.front().got] != channel) {
        drop("unexpected ssubscribe confirmation for " + channel);
        return;
      }
      if (++pending_.front().got == pending_.front().channels.size())
        pending_.pop_front();
      resubscribing_.erase(channel);
      auto it = server_.find(channel);
      if (it != server_.end() && it->second == channel_state::subscribing) {
        it->second = channel_state::subscribed;
        if (wanted_.count(channel) > 0) {
          if (on_subscribed)
            on_subscribed(channel);
        } else {
          dirty_.insert(channel); // unwanted while in flight: unsubscribe now
          schedule_flush();
        }
      }
      check_up();
      return;
    }
    if (kind == "sunsubscribe") {
      if (!pending_.empty() && pending_.front().kind == pending::sunsubscribe &&
          pending_.front().channels[pending_.front().got] == channel) {
        if (++pending_.front().got == pending_.front().channels.size())
          pending_.pop_front();
        auto it = server_.find(channel);
        if (it != server_.end() && it->second == channel_state::unsubscribing) {
          server_.erase(it);
          if (wanted_.count(channel) > 0) { // wanted again while in flight
            dirty_.insert(channel);
            schedule_flush();
          }
        }
        return;
      }
      // Not asked for: the node no longer serves the channel's slot.
      auto it = server_.find(channel);
      if (it != server_.end() && it->second == channel_state::subscribed) {
        server_.erase(it);
        if (wanted_.count(channel) > 0)
          lose(channel, {});
      }
      return;
    }
    if (kind == "pong") {
      if (!pending_.empty() && pending_.front().kind == pending::ping)
        pending_.pop_front();
      ping_outstanding_ = false;
      arm_ping(options_.heartbeat_interval);
      return;
    }
    return;
  }
  // A status or other plain reply: the handshake, or a PONG outside
  // subscribed mode.
  if (pending_.empty() && handshake_left_ == 0 && !ready_) {
    // on_connected() with no handshake commands.
  } else if (pending_.empty()) {
    return;
  } else if (pending_.front().kind == pending::ping) {
    pending_.pop_front();
    ping_outstanding_ = false;
    arm_ping(options_.heartbeat_interval);
    return;
  } else if (pending_.front().kind == pending::handshake) {
    pending_.pop_front();
    if (--handshake_left_ > 0)
      return;
  } else {
    drop("unexpected reply " + r.to_string());
    return;
  }
  // Handshake done: subscribe the wanted set.
  ready_ = true;
  connect_timer_.cancel();
  ++counters_.connects;
  if (counters_.connects > 1)
    ++counters_.reconnects;
  // backoff_ is reset only if this connection stays up (drop()), as
  // connection.hpp does: a node that closes it at once is not retried fast.
  ready_since_ = std::chrono::steady_clock::now();
  last_error_.clear();
  server_.clear();
  resubscribing_ = wanted_;
  dirty_ = wanted_;
  flush();
  if (options_.heartbeat_interval.count() > 0)
    arm_ping(options_.heartbeat_interval);
  check_up();
}

void shard_subscriber::on_error_reply(const std::string& text) {
  if (pending_.empty()) {
    drop("unexpected error reply: " + text);
    return;
  }
  auto p = std::move(pending_.front());
  pending_.pop_front();
  switch (p.kind) {
  case pending::handshake:
    drop("handshake: " + text);
    return;
  case pending::ping:
    ping_outstanding_ = false;
    arm_ping(options_.heartbeat_interval);
    return;
  case pending::sunsubscribe:
    drop("SUNSUBSCRIBE refused: " + text);
    return;
  case pending::ssubscribe:
    // None of the command's channels is subscribed (one slot: one answer).
    for (std::size_t i = p.got; i < p.channels.size(); ++i) {
      const auto& ch = p.channels[i];
      auto it = server_.find(ch);
      if (it != server_.end() && it->second == channel_state::subscribing)
        server_.erase(it);
      resubscribing_.erase(ch);
      if (wanted_.count(ch) > 0)
        lose(ch, text);
    }
    check_up();
    return;
  }
}

void shard_subscriber::lose(const std::string& channel, const std::string& error) {
  wanted_.erase(channel);
  dirty_.erase(channel);
  resubscribing_.erase(channel);
  ++counters_.lost;
  if (on_lost)
    on_lost(channel, error);
}

void shard_subscriber::check_up() {
  if (up_ || stopped_ || !ready_ || !resubscribing_.empty())
    return;
  up_ = true;
  ++counters_.ups;
  if (on_up)
    on_up();
}

// -- liveness -------------------------------------------------------------------

void shard_subscriber::arm_ping(std::chrono::milliseconds after) {
  if (options_.heartbeat_interval.count() <= 0 || stopped_ || !ready_)
    return;
  ping_timer_.expires_after(after);
  ping_timer_.async_wait([weak = std::weak_ptr<shard_subscriber>(shared_from_this()),
                          g = ++ping_gen_](boost::system::error_code ec) {
    auto s = weak.lock();
    if (ec || !s || s->ping_gen_ != g)
      return;
    s->on_ping_timer();
  });
}

void shard_subscriber::on_ping_timer() {
  if (stopped_ || !ready_)
    return;
  if (ping_outstanding_) {
    ++counters_.ping_timeouts;
    drop("no PONG within " + std::to_string(options_.heartbeat_timeout.count()) + " ms");
    return;
  }
  ping_outstanding_ = true;
  ++counters_.pings;
  send({"PING"}, {pending::ping, {}, 0});
  write_more();
  arm_ping(options_.heartbeat_timeout);
}

// -- batching -------------------------------------------------------------------

void shard_subscriber::subscribe(const std::vector<std::string>& channels) {
  for (const auto& ch : channels)
    if (wanted_.insert(ch).second)
      dirty_.insert(ch);
  schedule_flush();
}

void shard_subscriber::unsubscribe(const std::vector<std::string>& channels) {
  for (const auto& ch : channels)
    if (wanted_.erase(ch) > 0) {
      dirty_.insert(ch);
      resubscribing_.erase(ch);
    }
  schedule_flush();
  check_up();
}

void shard_subscriber::schedule_flush() {
  if (flush_posted_ || dirty_.empty())
    return;
  flush_posted_ = true;
  asio::post(executor_, [weak = std::weak_ptr<shard_subscriber>(shared_from_this())] {
    if (auto s = weak.lock()) {
      s->flush_posted_ = false;
      s->flush();
    }
  });
}

void shard_subscriber::flush() {
  if (!ready_ || stopped_ || dirty_.empty())
    return;
  // Every channel of one SSUBSCRIBE must hash to one slot on a cluster.
  std::map<std::uint16_t, std::vector<std::string>> subs, unsubs;
  for (auto it = dirty_.begin(); it != dirty_.end();) {
    const auto& ch = *it;
    auto st = server_.find(ch);
    bool want = wanted_.count(ch) > 0;
    if (st == server_.end()) {
      if (want) {
        subs[key_slot(ch)].push_back(ch);
        server_[ch] = channel_state::subscribing;
      }
    } else if (st->second == channel_state::subscribed) {
      if (!want) {
        unsubs[key_slot(ch)].push_back(ch);
        st->second = channel_state::unsubscribing;
      }
    } else {
      ++it; // in flight: looked at again when Redis confirms it
      continue;
    }
    it = dirty_.erase(it);
  }
  for (auto& [slot, chans] : unsubs) {
    std::vector<std::string> args{"SUNSUBSCRIBE"};
    args.insert(args.end(), chans.begin(), chans.end());
    ++counters_.unsubscribe_commands;
    send(args, {pending::sunsubscribe, std::move(chans), 0});
  }
  for (auto& [slot, chans] : subs) {
    std::vector<std::string> args{"SSUBSCRIBE"};
    args.insert(args.end(), chans.begin(), chans.end());
    ++counters_.subscribe_commands;
    send(args, {pending::ssubscribe, std::move(chans), 0});
  }
  write_more(); // the whole batch in one write
}

} // namespace herald::net::redis
