#include "net/redis/connection.hpp"

#include "net/obs/metrics.hpp"
#include "net/redis/hiredis_asio.hpp"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <hiredis/sds.h>

#include <algorithm>
#include <iterator>
#include <utility>

namespace herald::net::redis {

namespace {

std::string millis(std::chrono::milliseconds d) {
  return std::to_string(d.count()) + " ms";
}

// argv/argvlen views of `args` for redisAsyncCommandArgv (hiredis copies
// the formatted command at once, so the views only need to live for the call).
struct argv_view {
  explicit argv_view(const std::vector<std::string>& args) {
    argv.reserve(args.size());
    lens.reserve(args.size());
    for (const auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
  }
  int argc() const { return static_cast<int>(argv.size()); }
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
};

} // namespace

// -- construction -------------------------------------------------------------

std::shared_ptr<connection> connection::create(executor_type executor, connection_options options) {
  return std::shared_ptr<connection>(new connection(std::move(executor), std::move(options)));
}

connection::connection(executor_type executor, connection_options options)
  : executor_(std::move(executor)),
    options_(std::move(options)),
    resolver_(executor_),
    connect_timer_(executor_),
    backoff_timer_(executor_),
    command_timer_(executor_),
    heartbeat_timer_(executor_),
    backoff_(options_.min_backoff, options_.max_backoff) {}

// hold_ keeps the object alive while a context exists, so none is left here.
connection::~connection() = default;

// -- timers -------------------------------------------------------------------

// Every timer has a generation: a handler whose generation is stale does
// nothing. cancel() alone is not enough, because a handler that has already
// been queued runs with success even after cancel().
template <class Member>
void connection::arm(asio::steady_timer& timer, unsigned& generation,
                     std::chrono::steady_clock::duration after, Member member) {
  timer.expires_after(after);
  timer.async_wait([self = shared_from_this(), g = ++generation, &generation,
                    member](boost::system::error_code ec) {
    if (ec || g != generation)
      return;
    ((*self).*member)();
  });
}

void connection::disarm(asio::steady_timer& timer, unsigned& generation) {
  ++generation;
  timer.cancel();
}

void connection::cancel_timers() {
  disarm(connect_timer_, connect_gen_);
  disarm(command_timer_, command_gen_);
  disarm(heartbeat_timer_, heartbeat_gen_);
  command_timer_armed_ = false;
}

// -- control ------------------------------------------------------------------

void connection::start() {
  if (state_ != state::idle)
    return;
  begin_attempt();
}

void connection::stop() {
  if (state_ == state::stopped)
    return;
  state_ = state::stopped;
  cancel_timers();
  disarm(backoff_timer_, backoff_gen_);
  ++resolve_gen_;
  resolver_.cancel();
  if (ac_ == nullptr || freeing_)
    return;
  if (in_connect_callback_) {
    // hiredis 0.14 uses the context after onConnect returns: free it later.
    asio::post(executor_, [self = shared_from_this()] {
      if (self->ac_ != nullptr && !self->freeing_)
        self->drop("stopped");
    });
    return;
  }
  drop("stopped");
}

void connection::drop(std::string reason) {
  if (ac_ == nullptr || freeing_)
    return;
  if (in_connect_callback_) {
    asio::post(executor_, [self = shared_from_this(), reason = std::move(reason)]() mutable {
      self->drop(std::move(reason));
    });
    return;
  }
  freeing_ = true;
  drop_reason_ = reason;
  bool never_connected = !tcp_connected_;
  // Immediate even against a frozen server (redisAsyncDisconnect would wait
  // for the pending replies). Inside a reply callback hiredis defers the
  // free until the callback returns.
  redisAsyncFree(ac_);
  // hiredis calls onDisconnect only for a context that had connected.
  if (never_connected) {
    context_gone();
    handle_loss(reason);
  }
}

bool connection::connected() const noexcept {
  return state_ == state::up;
}

// -- attempts -----------------------------------------------------------------

void connection::begin_attempt() {
  ++counters_.connect_attempts;
  tcp_connected_ = false;
  freeing_ = false;
  drop_reason_.clear();
  if (options_.next_target)
    options_.target = options_.next_target();
  if (options_.connect_timeout.count() > 0)
    arm(connect_timer_, connect_gen_, options_.connect_timeout, &connection::on_connect_timer);

  boost::system::error_code ec;
  asio::ip::make_address(options_.target.host, ec);
  if (!ec) {
    connect_to(options_.target.host);
    return;
  }
  // hiredis would call getaddrinfo() on this thread; resolve in the background.
  state_ = state::resolving;
  resolver_.async_resolve(
    options_.target.host, std::to_string(options_.target.port),
    [self = shared_from_this(), g = ++resolve_gen_](boost::system::error_code error,
                                                    asio::ip::tcp::resolver::results_type results) {
      if (g != self->resolve_gen_ || self->state_ != state::resolving)
        return;
      if (error || results.empty()) {
        self->handle_loss("resolve " + self->options_.target.host + ": " +
                          (error ? error.message() : std::string("no address")));
        return;
      }
      self->connect_to(results.begin()->endpoint().address().to_string());
    });
}

void connection::connect_to(const std::string& address) {
  state_ = state::connecting;
  redisAsyncContext* ac = redisAsyncConnect(address.c_str(), options_.target.port);
  if (ac == nullptr) {
    handle_loss("connect: out of memory");
    return;
  }
  if (ac->err != 0) {
    std::string why = ac->errstr;
    redisAsyncFree(ac);
    handle_loss("connect to " + address + ": " + why);
    return;
  }
  ac->data = this;
  // Before redisAsyncSetConnectCallback, which already asks for a write wait.
  if (!attach_to_asio(executor_, ac)) {
    redisAsyncFree(ac);
    handle_loss("connect: cannot register the socket with Asio");
    return;
  }
  ac_ = ac;
  hold_ = shared_from_this();
  redisAsyncSetConnectCallback(ac_, &connection::on_connect_cb);
  redisAsyncSetDisconnectCallback(ac_, &connection::on_disconnect_cb);
}

void connection::on_connect_cb(const redisAsyncContext* ac, int status) noexcept {
  auto* self = static_cast<connection*>(ac->data);
  if (status != REDIS_OK) {
    // hiredis frees the context after we return and calls no onDisconnect.
    std::string why = std::string("connect: ") + ac->errstr;
    self->context_gone();
    self->handle_loss(why);
    return;
  }
  self->tcp_connected_ = true;
  self->state_ = state::handshaking;
  redisEnableKeepAlive(const_cast<redisContext*>(&ac->c)); // TCP keepalive, 15 s
  self->in_connect_callback_ = true;
  self->send_handshake();
  self->in_connect_callback_ = false;
}

void connection::send_handshake() {
  struct item {
    std::vector<std::string> args;
    step s;
    std::size_t script = 0;
  };
  std::vector<item> items;
  const auto& t = options_.target;
  if (!t.password.empty()) {
    if (t.username.empty())
      items.push_back({{"AUTH", t.password}, step::auth});
    else
      items.push_back({{"AUTH", t.username, t.password}, step::auth});
  }
  if (t.db != 0)
    items.push_back({{"SELECT", std::to_string(t.db)}, step::select});
  if (!options_.client_name.empty())
    items.push_back({{"CLIENT", "SETNAME", options_.client_name}, step::set_name});
  for (std::size_t i = 0; i < scripts_.size(); ++i)
    items.push_back({{"SCRIPT", "LOAD", scripts_[i].source}, step::load_script, i});
  // Always at least one round trip: "up" means the server answers.
  if (items.empty())
    items.push_back({{"PING"}, step::ping});

  handshake_remaining_ = items.size();
  for (auto& it : items) {
    // The callback runs while the context exists, and hold_ keeps us alive.
    send(it.args, [this, s = it.s, i = it.script](reply r) { on_handshake_reply(s, i, r); });
  }
}

void connection::on_handshake_reply(step s, std::size_t script_index, const reply& r) {
  if (state_ != state::handshaking || r.is_disconnected())
    return; // the loss is reported by the disconnect path
  if (s == step::load_script) {
    // A script that does not compile is not a connection problem: the sha
    // stays unknown and eval_script() uses EVAL, which returns the error.
    scripts_[script_index].sha = r.is_error() ? std::string{} : r.str;
  } else if (r.is_error()) {
    static constexpr const char* names[] = {"AUTH", "SELECT", "CLIENT SETNAME", "SCRIPT LOAD",
                                            "PING"};
    drop(std::string(names[static_cast<int>(s)]) + " failed: " + r.str);
    return;
  }
  if (--handshake_remaining_ == 0)
    become_up();
}

void connection::become_up() {
  state_ = state::up;
  backoff_.up(std::chrono::steady_clock::now()); // reset if it stays up
  ++counters_.connects;
  if (counters_.connects > 1)
    ++counters_.reconnects;
  last_error_.clear();
  disarm(connect_timer_, connect_gen_);
  if (options_.heartbeat_interval.count() > 0)
    arm(heartbeat_timer_, heartbeat_gen_, options_.heartbeat_interval,
        &connection::on_heartbeat_timer);
  if (on_up)
    on_up();
}

void connection::on_disconnect_cb(const redisAsyncContext* ac, int status) noexcept {
  auto* self = static_cast<connection*>(ac->data);
  std::string why = !self->drop_reason_.empty() ? self->drop_reason_
                    : status == REDIS_OK        ? std::string("connection closed")
                                                : std::string("connection lost: ") + ac->errstr;
  self->context_gone();
  self->handle_loss(why);
}

// The context is gone (or about to be freed by hiredis, which still calls
// our hooks): forget it. Our self-reference is released only after hiredis
// has finished with the context, through a posted handler.
void connection::context_gone() {
  ac_ = nullptr;
  tcp_connected_ = false;
  freeing_ = false;
  drop_reason_.clear();
  in_flight_.clear();
  appended_ = 0;
  last_reply_at_ = {};
  ping_outstanding_ = false;
  handshake_remaining_ = 0;
  cancel_timers();
  if (hold_)
    asio::post(executor_, [hold = std::move(hold_)] {});
}

void report_loss(bool was_up, const std::string& reason,
                 const std::function<void(const std::string&)>& on_down,
                 const std::function<void(const std::string&)>& on_attempt_failed) {
  const auto& report = was_up ? on_down : on_attempt_failed;
  if (report)
    report(reason);
}

// No context exists any more. Reports and schedules the next attempt.
void connection::handle_loss(const std::string& reason) {
  if (state_ == state::stopped)
    return;
  bool was_up = state_ == state::up;
  last_error_ = reason;
  disarm(connect_timer_, connect_gen_);
  if (was_up) {
    ++counters_.disconnects;
    // One closed right after its handshake keeps the backoff growing.
    backoff_.lost(std::chrono::steady_clock::now());
  } else {
    ++counters_.connect_failures;
  }
  schedule_reconnect();
  report_loss(was_up, reason, on_down, on_attempt_failed); // last: may call stop()
}

void connection::schedule_reconnect() {
  state_ = state::backoff;
  arm(backoff_timer_, backoff_gen_, backoff_.next(), &connection::begin_attempt);
}

void connection::on_connect_timer() {
  std::string why = "connect timeout after " + millis(options_.connect_timeout);
  if (state_ == state::resolving) {
    ++resolve_gen_;
    resolver_.cancel();
    handle_loss(why + " (resolving " + options_.target.host + ")");
  } else if (state_ == state::connecting) {
    drop(why + " (TCP connect)");
  } else if (state_ == state::handshaking) {
    drop(why + " (handshake)");
  }
}

// -- commands -----------------------------------------------------------------

bool connection::command(std::vector<std::string> args, reply_fn cb) {
  if (args.empty()) {
    post_reply(std::move(cb), reply::make_error("ERR empty command"));
    return false;
  }
  if (state_ != state::up || ac_ == nullptr || freeing_) {
    post_reply(std::move(cb), reply::not_sent());
    return false;
  }
  return send(args, std::move(cb));
}

int connection::append(const std::vector<std::string>& args,
                       void (*fn)(redisAsyncContext*, void*, void*), void* privdata) {
  argv_view v(args);
  // hiredis formats the command into its output buffer at once; the socket
  // is written later, when Asio reports it writable.
  const auto before = sdslen(ac_->c.obuf);
  int status = redisAsyncCommandArgv(ac_, fn, privdata, v.argc(), v.argv.data(), v.lens.data());
  if (status == REDIS_OK)
    appended_ += sdslen(ac_->c.obuf) - before;
  return status;
}

bool connection::send(const std::vector<std::string>& args, reply_fn cb) {
  auto heap_cb = std::make_unique<reply_fn>(std::move(cb));
  if (append(args, &connection::on_reply_cb, heap_cb.get()) != REDIS_OK) {
    // hiredis refused (the context is being freed) and did not take the callback.
    post_reply(std::move(*heap_cb), reply::not_sent());
    return false;
  }
  heap_cb.release(); // on_reply_cb deletes it: hiredis calls it exactly once
  in_flight_.push_back({std::chrono::steady_clock::now(), appended_});
  if (options_.command_timeout.count() > 0 && !command_timer_armed_)
    arm_command_timer();
  return true;
}

void connection::post_reply(reply_fn cb, reply r) {
  if (!cb)
    return;
  asio::post(executor_, [cb = std::move(cb), r = std::move(r)]() mutable { cb(std::move(r)); });
}

void connection::on_reply_cb(redisAsyncContext* ac, void* r, void* privdata) noexcept {
  std::unique_ptr<reply_fn> cb(static_cast<reply_fn*>(privdata));
  auto* self = static_cast<connection*>(ac->data);
  // Without a reply (the context is being freed; its output buffer still
  // holds what was never written): did this command's bytes all leave?
  bool written = true;
  if (!self->in_flight_.empty()) {
    // Replies come in command order: the oldest in flight is this one's.
    const auto now = std::chrono::steady_clock::now();
    if (r != nullptr) {
      metrics::observe(
        metrics::histogram::redis_command_latency,
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - self->in_flight_.front().sent)
          .count());
      self->last_reply_at_ = now;
    } else {
      const std::uint64_t unwritten = ac->c.obuf != nullptr ? sdslen(ac->c.obuf) : 0;
      written = self->in_flight_.front().end + unwritten <= self->appended_;
    }
    self->in_flight_.pop_front();
  }
  // A redisReply lives only inside this callback: copy it out.
  reply value = r != nullptr ? copy_reply(*static_cast<redisReply*>(r))
                : written    ? reply::disconnected()
                             : reply::not_sent();
  if (*cb)
    (*cb)(std::move(value));
}

std::chrono::steady_clock::time_point connection::front_start() const {
  return std::max(in_flight_.front().sent, last_reply_at_);
}

void connection::arm_command_timer() {
  command_timer_armed_ = true;
  auto deadline = front_start() + options_.command_timeout;
  command_timer_.expires_at(deadline);
  command_timer_.async_wait(
    [self = shared_from_this(), g = ++command_gen_](boost::system::error_code ec) {
      if (ec || g != self->command_gen_)
        return;
      self->on_command_timer();
    });
}

void connection::on_command_timer() {
  command_timer_armed_ = false;
  if (in_flight_.empty() || ac_ == nullptr || freeing_)
    return;
  if (front_start() + options_.command_timeout <= std::chrono::steady_clock::now()) {
    ++counters_.command_timeouts;
    drop("command timeout: no reply within " + millis(options_.command_timeout) +
         " of when Redis could start the command");
    return;
  }
  // The oldest was answered (or is still behind a blocking command that
  // answered late): wait for the one in front now.
  arm_command_timer();
}

void connection::on_heartbeat_timer() {
  if (state_ != state::up || ac_ == nullptr || freeing_)
    return;
  if (ping_outstanding_) {
    // A PING behind a blocking command (WAIT) is answered late by a server
    // that answers: only a server that answered nothing for the whole
    // timeout is frozen.
    const auto due = std::max(ping_sent_at_, last_reply_at_) + options_.heartbeat_timeout;
    const auto now = std::chrono::steady_clock::now();
    if (now < due) {
      arm(heartbeat_timer_, heartbeat_gen_, due - now, &connection::on_heartbeat_timer);
      return;
    }
    ++counters_.heartbeat_timeouts;
    drop("heartbeat timeout: no reply within " + millis(options_.heartbeat_timeout) +
         " while a PING waited");
    return;
  }
  ping_outstanding_ = true;
  ping_sent_at_ = std::chrono::steady_clock::now();
  send({"PING"}, [this](reply r) {
    if (r.is_disconnected() || state_ != state::up)
      return;
    ping_outstanding_ = false;
    arm(heartbeat_timer_, heartbeat_gen_, options_.heartbeat_interval,
        &connection::on_heartbeat_timer);
  });
  arm(heartbeat_timer_, heartbeat_gen_, options_.heartbeat_timeout,
      &connection::on_heartbeat_timer);
}

// -- scripts ------------------------------------------------------------------

script_id connection::add_script(std::string source) {
  scripts_.push_back({std::move(source), {}});
  std::size_t index = scripts_.size() - 1;
  if (state_ == state::up)
    load_script(index);
  return script_id{index};
}

void connection::load_script(std::size_t index) {
  send({"SCRIPT", "LOAD", scripts_[index].source}, [this, index](reply r) {
    if (!r.is_error())
      scripts_[index].sha = std::move(r.str);
  });
}

const std::string& connection::script_sha(script_id id) const {
  static const std::string none;
  return id.index < scripts_.size() ? scripts_[id.index].sha : none;
}

bool connection::eval_script(script_id id, std::vector<std::string> keys,
                             std::vector<std::string> args, reply_fn cb) {
  if (id.index >= scripts_.size()) {
    post_reply(std::move(cb), reply::make_error("ERR unknown script id"));
    return false;
  }
  const auto& script = scripts_[id.index];
  bool by_sha = !script.sha.empty();
  auto call = std::make_shared<std::vector<std::string>>();
  call->reserve(3 + keys.size() + args.size());
  call->push_back(by_sha ? "EVALSHA" : "EVAL");
  call->push_back(by_sha ? script.sha : script.source);
  call->push_back(std::to_string(keys.size()));
  std::move(keys.begin(), keys.end(), std::back_inserter(*call));
  std::move(args.begin(), args.end(), std::back_inserter(*call));
  if (!by_sha)
    return command(std::move(*call), std::move(cb));
  if (state_ != state::up || ac_ == nullptr || freeing_) {
    post_reply(std::move(cb), reply::not_sent());
    return false;
  }
  return send(*call, [self = shared_from_this(), call, id, cb = std::move(cb)](reply r) mutable {
    if (r.has_error_code("NOSCRIPT")) {
      // Not cached on this server (restart, SCRIPT FLUSH, failover): EVAL
      // runs it and caches it again, so the sha keeps working afterwards.
      ++self->counters_.script_fallbacks;
      (*call)[0] = "EVAL";
      (*call)[1] = self->scripts_[id.index].source;
      self->command(std::move(*call), std::move(cb));
      return;
    }
    if (cb)
      cb(std::move(r));
  });
}

} // namespace herald::net::redis
