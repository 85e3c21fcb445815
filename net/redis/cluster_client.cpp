#include "net/redis/cluster_client.hpp"

#include "net/obs/metrics_redis.hpp"
#include "net/redis/envelope.hpp"
#include "net/redis/slot.hpp"

#include <algorithm>
#include <set>

namespace herald::net::redis {

namespace {

// How often a command waiting for its master's connection looks again.
constexpr std::chrono::milliseconds wait_step{50};

} // namespace

std::shared_ptr<cluster_client> cluster_client::create(asio::io_context& ioc, options opts) {
  return std::shared_ptr<cluster_client>(new cluster_client(ioc, std::move(opts)));
}

cluster_client::cluster_client(asio::io_context& ioc, options opts)
  : strand_(asio::make_strand(ioc)),
    opts_(std::move(opts)),
    refresh_timer_(strand_) {
  opts_.scripts.sharded = true; // SPUBLISH: subscribers listen on the channel's shard only
}

// A node's URL: its address with the seeds' login (every node of a cluster
// shares users and passwords).
url cluster_client::url_of(const node_address& a) const {
  url u = opts_.seeds.seeds.front();
  u.host = a.host;
  u.port = a.port;
  u.db = 0;
  return u;
}

// The seeds first, then the masters of the map: a seed list that went stale
// (nodes replaced) still finds the cluster through a node it told us about.
url cluster_client::next_target() {
  std::vector<url> all = opts_.seeds.seeds;
  for (const auto& a : map_.masters())
    all.push_back(url_of(a));
  return all[rotation_++ % all.size()];
}

void cluster_client::start() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->stopped_ || self->topology_)
      return;
    std::weak_ptr<cluster_client> weak = self;
    connection_options copts;
    copts.target = self->opts_.seeds.seeds.front();
    copts.command_timeout = self->opts_.command_timeout;
    copts.max_backoff = std::chrono::milliseconds(1000);
    copts.next_target = [weak] {
      auto s = weak.lock();
      return s ? s->next_target() : url{};
    };
    copts.client_name = "herald-topology";
    self->topology_ = connection::create(self->strand_, copts);
    self->topology_->on_up = [weak] {
      if (auto s = weak.lock())
        s->refresh();
    };

    self->topology_->start();
    self->arm_refresh();
    if (self->opts_.wait_replicas > 0) {
      self->replicas_ = replica_watch::of(self, self->strand_);
      self->replicas_->start("waiting for " + std::to_string(self->opts_.wait_replicas) +
                             " replica(s) in sync on every master (--redis-wait-replicas)");
    }
  });
}

bool cluster_client::check_replicas(replica_watch::done_fn done) {
  auto masters = map_.masters();
  if (stopped_ || !up_ || !have_map_ || masters.empty())
    return false;
  // Every master in turn; the first that falls short is the reason.
  struct tally {
    std::size_t remaining = 0;
    std::string why; // first failure
    replica_watch::done_fn done;
  };
  auto t = std::make_shared<tally>();
  t->remaining = masters.size();
  t->done = std::move(done);
  auto finish = [t](const std::string& why) {
    if (!why.empty() && t->why.empty())
      t->why = why;
    if (--t->remaining == 0)
      t->done(t->why.empty(), t->why);
  };
  for (const auto& a : masters) {
    auto it = nodes_.find(a.to_string());
    if (it == nodes_.end() || !it->second.conn->connected()) {
      finish("master " + a.to_string() + ": not connected");
      continue;
    }
    check_master_replicas(it->second.conn, keys_for(opts_.scripts.prefix, it->second.probe_tag),
                          opts_.wait_replicas, opts_.command_timeout / 2, a.to_string(), finish);
  }
  return true;
}

void cluster_client::stop() {
  asio::post(strand_, [self = shared_from_this()] {
    self->stopped_ = true;
    ++self->refresh_gen_;
    self->refresh_timer_.cancel();
    if (self->replicas_)
      self->replicas_->stop();
    if (self->topology_)
      self->topology_->stop();
    for (auto& [name, sub] : self->subs_)
      sub->stop();
    for (auto& [name, n] : self->nodes_)
      n.conn->stop();
  });
}

// -- topology -------------------------------------------------------------------

void cluster_client::arm_refresh() {
  refresh_timer_.expires_after(opts_.refresh_interval);
  refresh_timer_.async_wait([weak = std::weak_ptr<cluster_client>(shared_from_this()),
                             g = ++refresh_gen_](boost::system::error_code ec) {
    auto s = weak.lock();
    if (ec || !s || g != s->refresh_gen_ || s->stopped_)
      return;
    s->refresh();
    s->report_still_down();
    s->publish_figures(); // reconnect counts and subscriptions move between events
    s->arm_refresh();
  });
}

std::string cluster_client::down_reason() const {
  if (!have_map_) {
    if (!map_error_.empty())
      return map_error_;
    if (topology_ && !topology_->last_error().empty())
      return "no Redis Cluster seed answers (last: " + topology_->last_error() + ")";
    return "reading the Redis Cluster slot map";
  }
  if (!map_.covers_all())
    return "the Redis Cluster slot map does not cover every slot";
  for (const auto& a : map_.masters()) {
    auto it = nodes_.find(a.to_string());
    if (it == nodes_.end() || !it->second.conn->connected()) {
      std::string why = "master " + a.to_string() + ": not connected";
      if (it != nodes_.end() && !it->second.conn->last_error().empty())
        why += " (" + it->second.conn->last_error() + ")";
      return why;
    }
  }
  // A shard subscriber that lost its connection. One that was never up
  // (just made for a new channel or a new master) does not count: its
  // channels are reported by on_watching once confirmed, and watching one
  // more channel must not make the whole instance not-ready.
  for (const auto& [name, sub] : subs_)
    if (sub->wanted_count() > 0 && !sub->up() && sub->counters().ups > 0)
      return "shard subscriber " + name + ": not subscribed" +
             (sub->last_error().empty() ? std::string{} : " (" + sub->last_error() + ")");
  return {};
}

void cluster_client::report_still_down() {
  if (up_ || stopped_ || !on_still_down)
    return;
  auto why = down_reason();
  if (!why.empty() && why != last_still_down_) {
    last_still_down_ = why;
    on_still_down(why);
  }
}

void cluster_client::refresh() {
  if (stopped_ || !topology_)
    return;
  if (refresh_in_flight_) {
    refresh_again_ = true; // the map may have changed after that request was answered
    return;
  }
  if (!topology_->connected())
    return; // its on_up refreshes
  refresh_in_flight_ = true;
  node_address asked{topology_->options().target.host, topology_->options().target.port};
  topology_->command({"CLUSTER", "SLOTS"},
                     [weak = std::weak_ptr<cluster_client>(shared_from_this()), asked](reply r) {
                       auto s = weak.lock();
                       if (!s || s->stopped_)
                         return;
                       s->refresh_in_flight_ = false;
                       slot_map m;
                       std::string error;
                       if (slot_map::parse_cluster_slots(r, asked, m, error)) {
                         ++s->map_refreshes_;
                         s->apply_map(std::move(m));
                       } else if (!r.is_disconnected()) {
                         // A node that is not (or not yet) part of a cluster: ask another one.
                         s->map_error_ = error + " (from " + asked.to_string() + ")";
                         s->update_state(s->map_error_);
                         s->topology_->drop(s->map_error_);
                       }
                       if (s->refresh_again_) {
                         s->refresh_again_ = false;
                         s->refresh();
                       }
                     });
}

cluster_client::node& cluster_client::ensure_node(const node_address& a) {
  auto key = a.to_string();
  auto it = nodes_.find(key);
  if (it != nodes_.end())
    return it->second;
  connection_options copts;
  copts.target = url_of(a);
  copts.client_name = "herald-cmd";
  copts.command_timeout = opts_.command_timeout;
  copts.max_backoff = std::chrono::milliseconds(1000);
  node n;
  n.address = a;
  n.conn = connection::create(strand_, copts);
  n.publish = n.conn->add_script(publish_script);
  n.sync = n.conn->add_script(sync_script);
  std::weak_ptr<cluster_client> weak = shared_from_this();
  n.conn->on_up = [weak] {
    if (auto s = weak.lock())
      s->update_state({});
  };
  n.conn->on_down = [weak, key](const std::string& why) {
    if (auto s = weak.lock()) {
      s->refresh(); // a failover may have moved its slots
      s->update_state("master " + key + ": " + why);
    }
  };
  n.conn->start();
  return nodes_.emplace(key, std::move(n)).first->second;
}

void cluster_client::apply_map(slot_map m) {
  map_ = std::move(m);
  have_map_ = true;
  map_error_.clear();
  std::set<std::string> masters;
  for (const auto& a : map_.masters()) {
    masters.insert(a.to_string());
    auto& n = ensure_node(a);
    // A probe key of this master: the first "herald.probe.<i>" tag whose
    // slot it serves (a few tries for a master of a third of the slots).
    n.probe_tag.clear();
    for (unsigned i = 0; i < 1'000'000 && n.probe_tag.empty(); ++i) {
      auto tag = "herald.probe." + std::to_string(i);
      auto owner = map_.master_for(key_slot(tag));
      if (owner != nullptr && *owner == a)
        n.probe_tag = tag;
    }
  }
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    if (masters.count(it->first) == 0) {
      it->second.conn->stop(); // pending commands get "disconnected"
      it = nodes_.erase(it);
    } else {
      ++it;
    }
  }
  // Every watched channel on the master of its slot; then close the shard
  // subscribers left with no channel (a lost master's, or an idle one).
  for (const auto& channel : watched_)
    place(channel);
  for (auto it = subs_.begin(); it != subs_.end();) {
    if (it->second->wanted_count() == 0) {
      it->second->stop();
      it = subs_.erase(it);
    } else {
      ++it;
    }
  }
  update_state({});
}

void cluster_client::publish_figures() {
  std::vector<metrics::redis_node> rows;
  for (const auto& st : nodes())
    rows.push_back({st.address, st.connected, st.slots, st.subscriptions, st.reconnects});
  for (const auto& [name, sub] : subs_) {
    if (std::any_of(rows.begin(), rows.end(), [&](auto& r) { return r.node == name; }))
      continue; // counted by nodes()
    // A node that left the map but still holds our channels (until the
    // next map moves them): a row of its own.
    rows.push_back({name, sub->connected(), 0, sub->confirmed_count(), sub->counters().reconnects});
  }
  metrics::set_redis_nodes(std::move(rows));
}

void cluster_client::update_state(const std::string& reason) {
  if (stopped_)
    return;
  publish_figures();
  auto why = down_reason();
  bool up = why.empty();
  if (up == up_)
    return;
  up_ = up;
  last_still_down_.clear();
  if (up) {
    if (on_up)
      on_up();
    // A master's loss made us "down" (the gateway forgets its confirmed
    // channels then) while the subscriber may have stayed subscribed on
    // another node: confirm every channel again, so each syncs from its
    // history as after an outage (fills what the failover lost in transit,
    // and moves a channel whose history went backwards to a new epoch).
    if (on_watching)
      for (const auto& channel : watched_)
        if (!subscribed_node(channel).empty())
          on_watching(channel);
  } else if (on_down) {
    on_down(reason.empty() ? why : reason);
  }
}

std::vector<cluster_client::node_state> cluster_client::nodes() const {
  std::vector<node_state> out;
  for (const auto& a : map_.masters()) {
    node_state st;
    st.address = a.to_string();
    st.slots = map_.slots_of(a);
    auto it = nodes_.find(st.address);
    if (it != nodes_.end()) {
      st.connected = it->second.conn->connected();
      st.reconnects = it->second.conn->counters().reconnects;
    }
    auto sub = subs_.find(st.address);
    if (sub != subs_.end()) {
      st.subscriptions = sub->second->confirmed_count();
      st.reconnects += sub->second->counters().reconnects;
    }
    out.push_back(std::move(st));
  }
  return out;
}

// -- commands -------------------------------------------------------------------

void cluster_client::run(script_kind kind, std::vector<std::string> keys,
                         std::vector<std::string> args, reply_fn done, int redirects_left,
                         std::chrono::steady_clock::time_point deadline) {
  if (stopped_) {
    done(reply::not_sent());
    return;
  }
  auto slot = key_slot(keys.front());
  const node_address* owner = map_.master_for(slot);
  node* n = nullptr;
  if (owner != nullptr) {
    auto it = nodes_.find(owner->to_string());
    if (it != nodes_.end() && it->second.conn->connected())
      n = &it->second;
  }
  if (n == nullptr) {
    // No map yet, or its master is (re)connecting: wait a little for it.
    if (std::chrono::steady_clock::now() + wait_step > deadline) {
      done(reply::not_sent());
      return;
    }
    auto timer = std::make_shared<asio::steady_timer>(strand_, wait_step);
    timer->async_wait([self = shared_from_this(), timer, kind, keys = std::move(keys),
                       args = std::move(args), done = std::move(done), redirects_left,
                       deadline](boost::system::error_code) mutable {
      self->run(kind, std::move(keys), std::move(args), std::move(done), redirects_left, deadline);
    });
    return;
  }
  auto id = kind == script_kind::publish ? n->publish : n->sync;
  n->conn->eval_script(id, keys, args,
                       [self = shared_from_this(), conn = n->conn, kind, keys, args,
                        done = std::move(done), redirects_left, deadline](reply r) mutable {
                         self->on_script_reply(conn, kind, std::move(keys), std::move(args),
                                               std::move(done), redirects_left, deadline,
                                               std::move(r));
                       });
}

void cluster_client::on_script_reply(const std::shared_ptr<connection>& conn, script_kind kind,
                                     std::vector<std::string> keys, std::vector<std::string> args,
                                     reply_fn done, int redirects_left,
                                     std::chrono::steady_clock::time_point deadline, reply r) {
  redirect rd;
  if (!r.is_error() && kind == script_kind::publish) {
    // Stored by the master: acknowledged once its replicas have it too.
    wait_for_replicas(*conn, opts_.wait_replicas, opts_.command_timeout / 2, std::move(r),
                      std::move(done));
    return;
  }
  if (!r.is_error() || !parse_redirect(r.str, rd) || redirects_left <= 0 || stopped_) {
    done(std::move(r));
    return;
  }
  ++redirects_;
  metrics::redis_redirect(rd.kind == redirect::ask);
  if (rd.kind == redirect::moved) {
    // The slot has a new owner: use it now, and read the whole map again
    // (a failover or a migration usually moves more than one slot).
    map_.assign(rd.slot, rd.to);
    ensure_node(rd.to);
    refresh();
    run(kind, std::move(keys), std::move(args), std::move(done), redirects_left - 1, deadline);
    return;
  }
  // ASK: the slot is migrating and this channel's keys are already on the
  // importing node; ask it once, after ASKING, and keep the map. EVAL (not
  // EVALSHA) so that no NOSCRIPT retry separates the command from ASKING.
  auto& target = ensure_node(rd.to);
  if (!target.conn->connected()) {
    done(reply::not_sent());
    return;
  }
  std::vector<std::string> call{"EVAL", kind == script_kind::publish ? publish_script : sync_script,
                                std::to_string(keys.size())};
  call.insert(call.end(), keys.begin(), keys.end());
  call.insert(call.end(), args.begin(), args.end());
  target.conn->command({"ASKING"});
  target.conn->command(std::move(call), [self = shared_from_this(), conn = target.conn, kind, keys,
                                         args, done = std::move(done), redirects_left,
                                         deadline](reply again) mutable {
    self->on_script_reply(conn, kind, std::move(keys), std::move(args), std::move(done),
                          redirects_left - 1, deadline, std::move(again));
  });
}

void cluster_client::publish(const std::string& channel, const publish_args& pub,
                             std::function<void(publish_result)> done) {
  asio::post(strand_, [self = shared_from_this(), channel, pub, done = std::move(done)]() mutable {
    std::vector<std::string> keys, args;
    publish_call(self->opts_.scripts, channel, pub, self->opts_.make_epoch(), keys, args);
    self->run(
      script_kind::publish, std::move(keys), std::move(args),
      [done = std::move(done)](reply r) mutable { done(to_publish_result(std::move(r))); },
      self->opts_.max_redirects, std::chrono::steady_clock::now() + self->opts_.command_timeout);
  });
}

void cluster_client::sync(const std::string& channel, std::uint64_t after, const std::string& epoch,
                          std::uint64_t delivered, std::function<void(sync_result)> done) {
  asio::post(strand_, [self = shared_from_this(), channel, after, epoch, delivered,
                       done = std::move(done)]() mutable {
    std::vector<std::string> keys, args;
    sync_call(self->opts_.scripts, channel, after, epoch, delivered, self->opts_.make_epoch(), keys,
              args);
    self->run(
      script_kind::sync, std::move(keys), std::move(args),
      [done = std::move(done)](reply r) mutable { done(to_sync_result(std::move(r))); },
      self->opts_.max_redirects, std::chrono::steady_clock::now() + self->opts_.command_timeout);
  });
}

void cluster_client::probe_write(std::function<void(publish_result)> done) {
  asio::post(strand_, [self = shared_from_this(), done = std::move(done)]() mutable {
    auto masters = self->map_.masters();
    if (!self->have_map_ || masters.empty()) {
      done({false, "not connected", {}, 0});
      return;
    }
    struct tally {
      std::size_t remaining;
      publish_result result;
      std::function<void(publish_result)> done;
    };
    auto t = std::make_shared<tally>();
    t->remaining = masters.size();
    t->result.ok = true;
    t->done = std::move(done);
    for (const auto& a : masters) {
      auto it = self->nodes_.find(a.to_string());
      if (it == self->nodes_.end()) { // apply_map() made one per master; never throw here
        if (--t->remaining == 0)
          t->done(std::move(t->result));
        continue;
      }
      auto& n = it->second;
      auto keys = keys_for(self->opts_.scripts.prefix, n.probe_tag);
      n.conn->command({"EVAL", probe_script, "2", keys.meta, keys.history},
                      [t, name = a.to_string()](reply r) {
                        auto res = to_probe_result(r);
                        if (!res.ok && t->result.ok) {
                          t->result = res;
                          t->result.error = "master " + name + ": " + res.error;
                        }
                        if (--t->remaining == 0)
                          t->done(std::move(t->result));
                      });
    }
  });
}

// -- pub/sub --------------------------------------------------------------------

std::string cluster_client::subscribed_node(const std::string& channel) const {
  auto it = placed_.find(channel);
  if (it == placed_.end())
    return {};
  auto sub = subs_.find(it->second);
  if (sub == subs_.end() || !sub->second->confirmed(keys_for(opts_.scripts.prefix, channel).pubsub))
    return {};
  return it->second;
}

subscriber& cluster_client::ensure_sub(const node_address& a) {
  auto key = a.to_string();
  auto it = subs_.find(key);
  if (it != subs_.end())
    return *it->second;
  connection_options copts;
  copts.target = url_of(a);
  copts.client_name = "herald-ssub";
  copts.min_backoff = std::chrono::milliseconds(100);
  copts.max_backoff = std::chrono::milliseconds(1000);
  copts.connect_timeout = opts_.command_timeout;
  copts.heartbeat_interval = std::chrono::milliseconds(1000);
  copts.heartbeat_timeout = opts_.command_timeout;
  auto sub = subscriber::create(strand_, copts, pubsub_mode::sharded);
  std::weak_ptr<cluster_client> weak = shared_from_this();
  sub->on_message = [weak](std::string pubsub, std::string payload) {
    auto s = weak.lock();
    if (!s || !s->on_message)
      return;
    auto channel = channel_of_pubsub(s->opts_.scripts.prefix, pubsub);
    if (!channel.empty())
      s->on_message(channel, std::move(payload));
  };
  sub->on_subscribed = [weak](const std::string& pubsub) {
    auto s = weak.lock();
    if (!s || !s->on_watching)
      return;
    auto channel = channel_of_pubsub(s->opts_.scripts.prefix, pubsub);
    if (!channel.empty())
      s->on_watching(channel);
  };
  sub->on_up = [weak] {
    if (auto s = weak.lock())
      s->update_state({});
  };
  sub->on_down = [weak, key](const std::string& why) {
    if (auto s = weak.lock()) {
      s->refresh();
      s->update_state("shard subscriber " + key + ": " + why);
    }
  };
  sub->on_lost = [weak, key](const std::string& pubsub, const std::string& error) {
    if (auto s = weak.lock())
      s->on_sub_lost(key, pubsub, error);
  };
  sub->start();
  return *subs_.emplace(key, std::move(sub)).first->second;
}

void cluster_client::place(const std::string& channel) {
  if (!have_map_ || stopped_ || watched_.count(channel) == 0)
    return;
  auto pubsub = keys_for(opts_.scripts.prefix, channel).pubsub;
  const node_address* owner = map_.master_for(key_slot(pubsub));
  if (owner == nullptr)
    return; // slot not covered: placed by the next map
  auto key = owner->to_string();
  auto it = placed_.find(channel);
  if (it != placed_.end()) {
    if (it->second == key)
      return;
    auto old = subs_.find(it->second);
    if (old != subs_.end())
      old->second->unsubscribe({pubsub});
  }
  placed_[channel] = key;
  ensure_sub(*owner).subscribe({pubsub});
}

void cluster_client::on_sub_lost(const std::string& node, const std::string& pubsub,
                                 const std::string& error) {
  if (stopped_)
    return;
  ++shard_moves_;
  auto channel = channel_of_pubsub(opts_.scripts.prefix, pubsub);
  auto it = placed_.find(channel);
  if (it != placed_.end() && it->second == node)
    placed_.erase(it); // no longer wanted there
  redirect rd;
  if (error.empty()) {
    // The node's slot moved away: subscribe where the map says. A map that
    // is not up to date yet names this node again, which answers MOVED.
    place(channel);
  } else if (parse_redirect(error, rd) && rd.kind == redirect::moved) {
    ++redirects_;
    metrics::redis_redirect(false);
    map_.assign(rd.slot, rd.to);
    ensure_node(rd.to);
    place(channel);
  }
  // Anything else (ASK while the slot migrates, CLUSTERDOWN, TRYAGAIN):
  // the next map (refresh below, or the periodic one) places it again.
  refresh();
  update_state({});
}

void cluster_client::watch(const std::string& channel) {
  asio::post(strand_, [self = shared_from_this(), channel] {
    self->watched_.insert(channel);
    self->place(channel);
  });
}

void cluster_client::unwatch(const std::string& channel) {
  asio::post(strand_, [self = shared_from_this(), channel] {
    self->watched_.erase(channel);
    auto it = self->placed_.find(channel);
    if (it != self->placed_.end()) {
      auto sub = self->subs_.find(it->second);
      if (sub != self->subs_.end())
        sub->second->unsubscribe({keys_for(self->opts_.scripts.prefix, channel).pubsub});
      self->placed_.erase(it);
    }
  });
}

} // namespace herald::net::redis
