#include "net/redis/client.hpp"

#include "net/redis/connection.hpp"
#include "net/redis/envelope.hpp"
#include "net/redis/replica_check.hpp"
#include "net/redis/script_reply.hpp"
#include "net/redis/subscriber.hpp"

#include <utility>

namespace herald::net::redis {

namespace {

// The backend on one Redis server: a pool of command connections and one
// pub/sub subscriber on one strand (client.hpp says what it reports).
class standalone_client final : public backend,
                                public std::enable_shared_from_this<standalone_client> {
public:
  standalone_client(asio::io_context& ioc, client::options opts)
    : strand_(asio::make_strand(ioc)),
      opts_(std::move(opts)) {}

  void publish(const std::string& channel, const publish_args& pub,
               std::function<void(publish_result)> done) override {
    asio::post(strand_, [self = shared_from_this(), channel, pub,
                         done = std::move(done)]() mutable {
      auto i = self->pick();
      if (i == npos) {
        done({false, "not connected", {}, 0});
        return;
      }
      std::vector<std::string> keys, args;
      publish_call(self->settings(), channel, pub, self->opts_.make_epoch(), keys, args);
      // When it cannot send, eval_script still calls the callback ("disconnected").
      auto& c = self->pool_[i];
      c->eval_script(self->publish_script_[i], std::move(keys), std::move(args),
                     [c, n = self->opts_.wait_replicas, t = self->opts_.command_timeout / 2,
                      done = std::move(done)](reply r) mutable {
                       wait_for_replicas(*c, n, t, std::move(r), [done = std::move(done)](reply w) {
                         done(to_publish_result(std::move(w)));
                       });
                     });
    });
  }

  void probe_write(std::function<void(publish_result)> done) override {
    asio::post(strand_, [self = shared_from_this(), done = std::move(done)]() mutable {
      auto i = self->pick();
      if (i == npos) {
        done({false, "not connected", {}, 0});
        return;
      }
      // Two keys of one hash tag, like a publish's (`<prefix>{herald.probe}:meta`
      // and `:history`), expiring at once.
      auto keys = keys_for(self->opts_.prefix, "herald.probe");
      self->pool_[i]->command(
        {"EVAL", probe_script, "2", keys.meta, keys.history},
        [done = std::move(done)](reply r) mutable { done(to_probe_result(r)); });
    });
  }

  void sync(const std::string& channel, std::uint64_t after, const std::string& epoch,
            std::uint64_t delivered, std::function<void(sync_result)> done) override {
    asio::post(strand_, [self = shared_from_this(), channel, after, epoch, delivered,
                         done = std::move(done)]() mutable {
      auto i = self->pick();
      if (i == npos) {
        done({false, "not connected", {}, 0, {}});
        return;
      }
      std::vector<std::string> keys, args;
      sync_call(self->settings(), channel, after, epoch, delivered, self->opts_.make_epoch(), keys,
                args);
      self->pool_[i]->eval_script(
        self->sync_script_[i], std::move(keys), std::move(args),
        [done = std::move(done)](reply r) mutable { done(to_sync_result(std::move(r))); });
    });
  }

  void watch(const std::string& channel) override {
    asio::post(strand_, [self = shared_from_this(), channel] {
      if (self->subscriber_)
        self->subscriber_->subscribe({keys_for(self->opts_.prefix, channel).pubsub});
    });
  }

  void unwatch(const std::string& channel) override {
    asio::post(strand_, [self = shared_from_this(), channel] {
      if (self->subscriber_)
        self->subscriber_->unsubscribe({keys_for(self->opts_.prefix, channel).pubsub});
    });
  }

  void start() override {
    asio::post(strand_, [self = shared_from_this()] {
      connection_options copts;
      copts.target = self->opts_.target;
      copts.command_timeout = self->opts_.command_timeout;
      for (std::size_t i = 0; i < self->opts_.pool_size; ++i) {
        copts.client_name = "herald-cmd-" + std::to_string(i);
        auto c = connection::create(self->strand_, copts);
        self->publish_script_.push_back(c->add_script(publish_script));
        self->sync_script_.push_back(c->add_script(sync_script));
        std::weak_ptr<standalone_client> weak = self;
        c->on_up = [weak] {
          if (auto s = weak.lock())
            s->update_state({});
        };
        c->on_down = [weak](const std::string& why) {
          if (auto s = weak.lock())
            s->update_state("command connection: " + why);
        };
        // Every connection goes to the same server: one that cannot log in
        // fails the same way for each, so the reason is reported without
        // saying which (no change, no new log line).
        c->on_attempt_failed = [weak](const std::string& why) {
          if (auto s = weak.lock())
            s->report_still_down(why);
        };
        self->pool_.push_back(c);
      }
      copts.client_name = "herald-sub";
      // Classic SUBSCRIBE: a standalone Redis (6 too) and every channel on one
      // connection. Its PING heartbeat needs no channel permission, so an ACL
      // user limited to the prefix (`&<prefix>*`) is enough.
      self->subscriber_ = subscriber::create(self->strand_, copts, pubsub_mode::classic);
      std::weak_ptr<standalone_client> weak = self;
      self->subscriber_->on_message = [weak](std::string pubsub, std::string payload) {
        auto s = weak.lock();
        if (!s || !s->on_message)
          return;
        auto channel = channel_of_pubsub(s->opts_.prefix, pubsub);
        if (!channel.empty())
          s->on_message(channel, std::move(payload));
      };
      self->subscriber_->on_subscribed = [weak](const std::string& pubsub) {
        auto s = weak.lock();
        if (!s || !s->on_watching)
          return;
        auto channel = channel_of_pubsub(s->opts_.prefix, pubsub);
        if (!channel.empty())
          s->on_watching(channel);
      };
      self->subscriber_->on_up = [weak] {
        if (auto s = weak.lock())
          s->update_state({});
      };
      self->subscriber_->on_down = [weak](const std::string& why) {
        if (auto s = weak.lock())
          s->update_state("subscriber: " + why);
      };
      self->subscriber_->on_attempt_failed = [weak](const std::string& why) {
        if (auto s = weak.lock())
          s->report_still_down(why.rfind("SUBSCRIBE", 0) == 0 ? "subscriber: " + why : why);
      };
      for (auto& c : self->pool_)
        c->start();
      self->subscriber_->start();
      if (self->opts_.wait_replicas > 0) {
        self->replicas_ = replica_watch::of(self, self->strand_);
        self->replicas_->start("waiting for " + std::to_string(self->opts_.wait_replicas) +
                               " replica(s) in sync (--redis-wait-replicas)");
      }
    });
  }

  void stop() override {
    asio::post(strand_, [self = shared_from_this()] {
      self->stopped_ = true;
      if (self->replicas_)
        self->replicas_->stop();
      for (auto& c : self->pool_)
        c->stop();
      if (self->subscriber_)
        self->subscriber_->stop();
    });
  }

private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  /// Index of a connected command connection (round robin), or npos.
  std::size_t pick() {
    for (std::size_t i = 0; i < pool_.size(); ++i) {
      auto k = (next_ + i) % pool_.size();
      if (pool_[k]->connected()) {
        next_ = (k + 1) % pool_.size();
        return k;
      }
    }
    return npos;
  }

  script_settings settings() const {
    script_settings s;
    s.prefix = opts_.prefix;
    s.history_size = opts_.history_size;
    s.history_ttl = opts_.history_ttl;
    s.idempotency_window = opts_.idempotency_window;
    s.classes = opts_.classes;
    return s;
  }

  void update_state(const std::string& reason) {
    if (stopped_)
      return;
    bool any = false;
    for (auto& c : pool_)
      any = any || c->connected();
    bool up = any && subscriber_ && subscriber_->up();
    if (up == up_)
      return;
    up_ = up;
    if (up) {
      last_still_down_.clear();
      if (on_up)
        on_up();
    } else {
      last_still_down_ = reason.empty() ? std::string{"not connected"} : reason;
      if (on_down)
        on_down(last_still_down_);
    }
  }

  /// While not up: an attempt failed; calls on_still_down when the reason
  /// is not the one reported last.
  void report_still_down(const std::string& reason) {
    if (up_ || stopped_ || !on_still_down || reason == last_still_down_)
      return;
    last_still_down_ = reason;
    on_still_down(reason);
  }

  friend class redis::replica_watch; // qualified: this class is in an unnamed namespace
  /// --redis-wait-replicas, every second (replicas_): while up, checks the
  /// master on a connected command connection (check_master_replicas).
  /// @returns false when it cannot check now.
  bool check_replicas(replica_watch::done_fn done) {
    if (stopped_)
      return false;
    auto i = pick();
    if (i == npos || !up_)
      return false;
    check_master_replicas(
      pool_[i], keys_for(opts_.prefix, "herald.probe"), opts_.wait_replicas,
      opts_.command_timeout / 2, {},
      [done = std::move(done)](const std::string& why) { done(why.empty(), why); });
    return true;
  }

  asio::strand<asio::io_context::executor_type> strand_;
  client::options opts_;
  std::vector<std::shared_ptr<connection>> pool_;
  std::vector<script_id> publish_script_, sync_script_;
  std::shared_ptr<subscriber> subscriber_;
  std::size_t next_ = 0;
  bool up_ = false;
  bool stopped_ = false;
  std::string last_still_down_;             ///< the reason given last by on_down / on_still_down
  std::shared_ptr<replica_watch> replicas_; ///< with --redis-wait-replicas only
};

} // namespace

std::shared_ptr<backend> client::create(asio::io_context& ioc, options opts) {
  return std::make_shared<standalone_client>(ioc, std::move(opts));
}

} // namespace herald::net::redis
