#include "net/redis/subscriber.hpp"

#include <hiredis/hiredis.h>

#include <cstdio>
#include <random>
#include <string_view>

namespace herald::net::redis {

namespace {

std::string random_probe_name(const std::string& prefix) {
  std::random_device rd;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  return prefix + "__herald_probe:" + buf;
}

std::string_view str_of(const redisReply* r) {
  if (r == nullptr || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS))
    return {};
  return {r->str, r->len};
}

} // namespace

std::shared_ptr<subscriber> subscriber::create(executor_type executor, connection_options options,
                                               const std::string& prefix) {
  std::shared_ptr<subscriber> s(new subscriber(std::move(executor), std::move(options), prefix));
  s->install_handlers();
  return s;
}

subscriber::subscriber(executor_type executor, connection_options options,
                       const std::string& prefix)
  : probe_interval_(options.heartbeat_interval),
    probe_timeout_(options.heartbeat_timeout),
    probe_timer_(executor),
    probe_channel_(random_probe_name(prefix)) {
  // hiredis 0.14 never delivers a PING reply on a subscribed connection.
  options.heartbeat_interval = std::chrono::milliseconds(0);
  conn_ = connection::create(std::move(executor), std::move(options));
}

subscriber::~subscriber() = default;

// The connection may outlive us (it keeps itself alive while connected), so
// its handlers hold weak references.
void subscriber::install_handlers() {
  std::weak_ptr<subscriber> weak = shared_from_this();
  conn_->on_up = [weak] {
    if (auto self = weak.lock())
      self->on_connection_up();
  };
  conn_->on_down = [weak](const std::string& reason) {
    if (auto self = weak.lock())
      self->on_connection_down(reason);
  };
  conn_->on_attempt_failed = [weak](const std::string& reason) {
    auto self = weak.lock();
    if (self && !self->stopped_ && self->on_attempt_failed)
      self->on_attempt_failed(reason);
  };
  conn_->push_handler_ = [weak](const redisReply& r) {
    if (auto self = weak.lock())
      self->on_push(r);
  };
}

void subscriber::start() {
  if (!stopped_)
    conn_->start();
}

void subscriber::stop() {
  if (stopped_)
    return;
  stopped_ = true;
  up_ = false;
  ++probe_gen_;
  probe_timer_.cancel();
  conn_->stop();
  server_.clear();
  resubscribing_.clear();
  dirty_.clear();
}

bool subscriber::connected() const noexcept {
  return conn_->connected();
}

bool subscriber::confirmed(const std::string& channel) const {
  auto it = server_.find(channel);
  return it != server_.end() && it->second == channel_state::subscribed;
}

// -- connection events --------------------------------------------------------

void subscriber::on_connection_up() {
  if (stopped_)
    return;
  server_.clear();
  dirty_.clear(); // the whole wanted set goes out now
  resubscribing_.clear();
  up_ = false;

  // One SUBSCRIBE: the probe channel first (it stays subscribed, so the
  // connection never leaves subscribed mode), then every wanted channel.
  std::vector<std::string> args;
  args.reserve(2 + wanted_.size());
  args.push_back("SUBSCRIBE");
  args.push_back(probe_channel_);
  resubscribing_.insert(probe_channel_);
  for (const auto& ch : wanted_) {
    args.push_back(ch);
    server_[ch] = channel_state::subscribing;
    resubscribing_.insert(ch);
  }
  if (!conn_->send_pubsub(args))
    return; // the context is going away; the next on_up starts over
  ++counters_.subscribe_commands;
  ++counters_.probes;
  // The resubscription doubles as the first probe.
  probe_outstanding_ = true;
  if (probe_interval_.count() > 0)
    arm_probe(probe_timeout_);
}

void subscriber::on_connection_down(const std::string& reason) {
  bool was_up = up_;
  // Lost while the SUBSCRIBE of the whole set was unconfirmed: Redis closes
  // the connection when it refuses one (hiredis 0.14 treats an error reply
  // to SUBSCRIBE as fatal), e.g. NOPERM from an ACL without the channel.
  std::string failed;
  if (!was_up && !stopped_ && !resubscribing_.empty()) {
    failed = "SUBSCRIBE of " + probe_channel_;
    if (resubscribing_.size() > 1)
      failed += " and " + std::to_string(resubscribing_.size() - 1) + " other channel(s)";
    failed += " failed: " + reason;
  }
  up_ = false;
  server_.clear();
  resubscribing_.clear();
  dirty_.clear();
  probe_outstanding_ = false;
  ++probe_gen_;
  probe_timer_.cancel();
  if (was_up && !stopped_ && on_down)
    on_down(reason);
  else if (!was_up && !stopped_ && on_attempt_failed)
    on_attempt_failed(failed.empty() ? reason : failed);
}

// Called by hiredis (through the connection) for every reply on a
// subscribed channel; `r` is valid only during this call.
void subscriber::on_push(const redisReply& r) {
  if (stopped_ || r.type != REDIS_REPLY_ARRAY || r.elements < 3)
    return;
  auto kind = str_of(r.element[0]);
  auto channel = str_of(r.element[1]);
  if (kind == "message") {
    std::string ch(channel);
    if (wanted_.count(ch) == 0)
      return; // unsubscribed meanwhile, or the probe channel
    ++counters_.messages;
    auto payload = str_of(r.element[2]);
    if (on_message)
      on_message(std::move(ch), std::string(payload));
  } else if (kind == "subscribe") {
    on_confirm_subscribe(std::string(channel));
  } else if (kind == "unsubscribe") {
    on_confirm_unsubscribe(std::string(channel));
  }
}

void subscriber::on_confirm_subscribe(const std::string& channel) {
  if (channel == probe_channel_) {
    probe_outstanding_ = false;
    if (probe_interval_.count() > 0)
      arm_probe(probe_interval_);
    resubscribing_.erase(channel);
    check_up();
    return;
  }
  resubscribing_.erase(channel);
  auto it = server_.find(channel);
  if (it != server_.end() && it->second == channel_state::subscribing) {
    it->second = channel_state::subscribed;
    if (wanted_.count(channel) > 0 && on_subscribed)
      on_subscribed(channel);
  }
  check_up();
}

void subscriber::on_confirm_unsubscribe(const std::string& channel) {
  auto it = server_.find(channel);
  if (it == server_.end() || it->second != channel_state::unsubscribing)
    return;
  server_.erase(it);
  // Wanted again while the UNSUBSCRIBE was in flight: subscribe now. One
  // transition per channel is in flight at a time, so server_ always says
  // what Redis will have once the commands sent so far are done.
  if (wanted_.count(channel) > 0) {
    dirty_.insert(channel);
    schedule_flush();
  }
}

void subscriber::check_up() {
  if (up_ || stopped_ || !resubscribing_.empty() || !conn_->connected())
    return;
  up_ = true;
  ++counters_.ups;
  if (on_up)
    on_up();
}

// -- batching -----------------------------------------------------------------

void subscriber::subscribe(const std::vector<std::string>& channels) {
  bool changed = false;
  for (const auto& ch : channels) {
    if (ch == probe_channel_)
      continue;
    if (wanted_.insert(ch).second) {
      dirty_.insert(ch);
      changed = true;
    }
  }
  if (changed)
    schedule_flush();
}

void subscriber::unsubscribe(const std::vector<std::string>& channels) {
  bool changed = false;
  for (const auto& ch : channels) {
    if (wanted_.erase(ch) > 0) {
      dirty_.insert(ch);
      changed = true;
    }
  }
  if (changed)
    schedule_flush();
}

void subscriber::schedule_flush() {
  if (flush_posted_ || stopped_)
    return;
  flush_posted_ = true;
  asio::post(get_executor(), [weak = weak_from_this()] {
    if (auto self = weak.lock()) {
      self->flush_posted_ = false;
      self->flush();
    }
  });
}

void subscriber::flush() {
  if (dirty_.empty())
    return;
  if (stopped_ || !conn_->connected()) {
    dirty_.clear(); // on_connection_up sends the whole wanted set
    return;
  }
  std::vector<std::string> sub{"SUBSCRIBE"};
  std::vector<std::string> unsub{"UNSUBSCRIBE"};
  for (const auto& ch : dirty_) {
    bool want = wanted_.count(ch) > 0;
    auto it = server_.find(ch);
    if (want && it == server_.end()) {
      sub.push_back(ch);
      server_[ch] = channel_state::subscribing;
    } else if (!want && it != server_.end() && it->second != channel_state::unsubscribing) {
      unsub.push_back(ch);
      it->second = channel_state::unsubscribing;
    }
    // want && unsubscribing: resubscribed when the confirmation arrives.
  }
  dirty_.clear();
  if (sub.size() > 1 && conn_->send_pubsub(sub))
    ++counters_.subscribe_commands;
  if (unsub.size() > 1 && conn_->send_pubsub(unsub))
    ++counters_.unsubscribe_commands;
}

// -- probe --------------------------------------------------------------------

void subscriber::arm_probe(std::chrono::milliseconds after) {
  probe_timer_.expires_after(after);
  probe_timer_.async_wait(
    [weak = weak_from_this(), g = ++probe_gen_](boost::system::error_code ec) {
      auto self = weak.lock();
      if (ec || !self || g != self->probe_gen_)
        return;
      self->on_probe_timer();
    });
}

void subscriber::on_probe_timer() {
  if (stopped_ || !conn_->connected())
    return;
  if (probe_outstanding_) {
    ++counters_.probe_timeouts;
    conn_->drop("probe timeout: SUBSCRIBE not confirmed within " +
                std::to_string(probe_timeout_.count()) + " ms");
    return;
  }
  send_probe();
}

// Re-SUBSCRIBE of a channel we already have: Redis confirms it, which is
// our PONG (hiredis 0.14 keeps the channel's callback; nothing changes).
void subscriber::send_probe() {
  if (!conn_->send_pubsub({"SUBSCRIBE", probe_channel_}))
    return;
  ++counters_.probes;
  probe_outstanding_ = true;
  arm_probe(probe_timeout_);
}

} // namespace herald::net::redis
