#include "net/redis/client.hpp"

#include "net/redis/envelope.hpp"

namespace herald::net::redis {

std::shared_ptr<client> client::create(asio::io_context& ioc, options opts) {
  return std::shared_ptr<client>(new client(ioc, std::move(opts)));
}

client::client(asio::io_context& ioc, options opts)
  : strand_(asio::make_strand(ioc)), opts_(std::move(opts)) {
}

void client::start() {
  asio::post(strand_, [self = shared_from_this()] {
    connection_options copts;
    copts.target = self->opts_.target;
    copts.command_timeout = self->opts_.command_timeout;
    for (std::size_t i = 0; i < self->opts_.pool_size; ++i) {
      copts.client_name = "herald-cmd-" + std::to_string(i);
      auto c = connection::create(self->strand_, copts);
      self->publish_script_.push_back(c->add_script(publish_script));
      self->sync_script_.push_back(c->add_script(sync_script));
      std::weak_ptr<client> weak = self;
      c->on_up = [weak] {
        if (auto s = weak.lock())
          s->update_state({});
      };
      c->on_down = [weak](const std::string& why) {
        if (auto s = weak.lock())
          s->update_state("command connection: " + why);
      };
      self->pool_.push_back(c);
    }
    copts.client_name = "herald-sub";
    self->subscriber_ = subscriber::create(self->strand_, copts);
    std::weak_ptr<client> weak = self;
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
    for (auto& c : self->pool_)
      c->start();
    self->subscriber_->start();
  });
}

void client::stop() {
  asio::post(strand_, [self = shared_from_this()] {
    self->stopped_ = true;
    for (auto& c : self->pool_)
      c->stop();
    if (self->subscriber_)
      self->subscriber_->stop();
  });
}

std::size_t client::pick() {
  for (std::size_t i = 0; i < pool_.size(); ++i) {
    auto k = (next_ + i) % pool_.size();
    if (pool_[k]->connected()) {
      next_ = (k + 1) % pool_.size();
      return k;
    }
  }
  return npos;
}

void client::update_state(const std::string& reason) {
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
    if (on_up)
      on_up();
  } else if (on_down) {
    on_down(reason.empty() ? std::string{"not connected"} : reason);
  }
}

void client::publish(const std::string& channel, const std::string& event,
                     const std::string& data, const std::string& idempotency_key,
                     std::function<void(publish_result)> done) {
  asio::post(strand_, [self = shared_from_this(), channel, event, data, idempotency_key,
                       done = std::move(done)]() mutable {
    auto i = self->pick();
    if (i == npos) {
      done({false, "not connected", {}, 0});
      return;
    }
    auto& c = self->pool_[i];
    auto keys = keys_for(self->opts_.prefix, channel);
    auto cb = [done = std::move(done)](reply r) mutable {
      if (r.type == reply::array && (r.elements.size() == 2 || r.elements.size() == 3)
          && r.elements[0].type == reply::string && r.elements[1].type == reply::integer
          && r.elements[1].number > 0) {
        publish_result res{true, {}, r.elements[0].str,
                           static_cast<std::uint64_t>(r.elements[1].number)};
        res.duplicate = r.elements.size() == 3;
        done(std::move(res));
        return;
      }
      publish_result res{false, r.is_error() ? r.str : "unexpected reply " + r.to_string(), {}, 0};
      // An error reply from a live connection: Redis refused the write.
      res.refused = r.is_error() && !r.is_disconnected();
      done(std::move(res));
    };
    std::vector<std::string> script_keys{keys.meta, keys.history};
    if (!idempotency_key.empty())
      script_keys.push_back(idempotency_key_for(self->opts_.prefix, channel, idempotency_key));
    // When it cannot send, eval_script still calls `cb` (with "disconnected").
    c->eval_script(self->publish_script_[i], std::move(script_keys),
                   {keys.pubsub, channel, event, data, std::to_string(self->opts_.history_size),
                    std::to_string(self->opts_.history_ttl.count()), self->opts_.make_epoch(),
                    std::to_string(self->opts_.idempotency_window.count())},
                   std::move(cb));
  });
}

void client::probe_write(std::function<void(publish_result)> done) {
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
      {"EVAL",
       "redis.call('SET', KEYS[1], '1', 'PX', 1000) redis.call('SET', KEYS[2], '1', 'PX', 1000) "
       "return 1",
       "2", keys.meta, keys.history},
      [done = std::move(done)](reply r) mutable {
        publish_result res;
        res.ok = !r.is_error();
        if (!res.ok) {
          res.error = r.str;
          res.refused = !r.is_disconnected();
        }
        done(std::move(res));
      });
  });
}

void client::sync(const std::string& channel, std::uint64_t after, const std::string& epoch,
                  std::uint64_t delivered, std::function<void(sync_result)> done) {
  asio::post(strand_, [self = shared_from_this(), channel, after, epoch, delivered,
                       done = std::move(done)]() mutable {
    auto i = self->pick();
    if (i == npos) {
      done({false, "not connected", {}, 0, {}});
      return;
    }
    auto& c = self->pool_[i];
    auto keys = keys_for(self->opts_.prefix, channel);
    auto cb = [done = std::move(done)](reply r) mutable {
      sync_result res;
      if (r.type != reply::array || r.elements.size() != 3 || r.elements[0].type != reply::string
          || r.elements[1].type != reply::integer || r.elements[2].type != reply::array) {
        res.error = r.is_error() ? r.str : "unexpected reply";
        done(std::move(res));
        return;
      }
      res.ok = true;
      res.epoch = r.elements[0].str;
      res.head = static_cast<std::uint64_t>(std::max(0LL, r.elements[1].number));
      // Entries: [id, ["p", envelope]]
      for (auto& e : r.elements[2].elements) {
        if (e.type != reply::array || e.elements.size() != 2)
          continue;
        auto& fields = e.elements[1].elements;
        for (std::size_t k = 0; k + 1 < fields.size(); k += 2)
          if (fields[k].str == "p")
            res.envelopes.push_back(std::move(fields[k + 1].str));
      }
      done(std::move(res));
    };
    c->eval_script(self->sync_script_[i], {keys.meta, keys.history},
                   {self->opts_.make_epoch(), std::to_string(after),
                    std::to_string(self->opts_.history_ttl.count()), epoch,
                    std::to_string(delivered)},
                   std::move(cb));
  });
}

void client::watch(const std::string& channel) {
  asio::post(strand_, [self = shared_from_this(), channel] {
    if (self->subscriber_)
      self->subscriber_->subscribe({keys_for(self->opts_.prefix, channel).pubsub});
  });
}

void client::unwatch(const std::string& channel) {
  asio::post(strand_, [self = shared_from_this(), channel] {
    if (self->subscriber_)
      self->subscriber_->unsubscribe({keys_for(self->opts_.prefix, channel).pubsub});
  });
}

} // namespace herald::net::redis
