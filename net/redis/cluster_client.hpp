// cluster_client: the Redis backend of cluster mode (backend.hpp) on a
// Redis Cluster, on hiredis and Asio. Created by app/server when
// --redis-url is a redis+cluster:// URL, owned by the Redis gateway actor;
// the standalone counterpart is client.hpp.
//
// Topology: a topology connection asks a seed (rotating through the seeds
// and the masters it knows while none answers) for CLUSTER SLOTS at start,
// every `refresh_interval`, at once after a MOVED redirection and after a
// master's connection is lost, and keeps the slot map (cluster_map.hpp).
// It keeps one command connection per master of the map (each reconnecting
// by itself, as connection.hpp), and closes those of nodes that no longer
// serve slots. Every publish and sync script runs on the master of its
// channel's slot (every name of a channel shares one hash tag, see
// envelope.hpp); a MOVED reply updates that slot in the map and sends the
// command again to the new owner, an ASK reply sends it once to the
// importing node after ASKING, both at most `max_redirects` times. A command
// whose master is not connected waits for it (every 50 ms) up to
// `command_timeout`, so a failover's new master is used as soon as the map
// names it; it then fails like a lost connection (the publisher gets 503).
//
// Pub/sub (sharded, Redis 7): the publish script runs SPUBLISH on the
// channel's master (script_settings::sharded), so a publication reaches only
// that shard. For every master that owns the slot of a watched channel the
// client keeps one subscriber in pubsub_mode::sharded (subscriber.hpp),
// which SSUBSCRIBEs the `<prefix>{<channel>}:pub` names of the channels
// whose slots that master serves; subscribers left with no channel are
// closed at the next map refresh. A channel follows its slot: when the map names a new owner
// (refresh, MOVED, failover) it is SUNSUBSCRIBEd on the old node and
// SSUBSCRIBEd on the new one; when a node sends an unasked `sunsubscribe`
// (its slot migrated away) or refuses the SSUBSCRIBE with MOVED, the
// channel is subscribed on the owner named by the map (MOVED updates the
// map first); other refusals (CLUSTERDOWN, ASK, TRYAGAIN) wait for the next
// map refresh. Every confirmed SSUBSCRIBE is reported as on_watching, so
// the channel syncs from its history stream (which migrated with the slot)
// and fills what was published while it moved; the channel actors drop
// offsets they already delivered, so nothing is delivered twice.
//
// State: "up" when the map covers every slot, every master's connection is
// up and no shard subscriber that holds channels has lost its connection
// (a new one, still connecting, does not count: its channels are reported
// by on_watching once confirmed); "down" (with a reason naming the node)
// otherwise. On every return to "up" each watched channel is reported as
// watching again (on_watching), also those whose shard subscriber stayed
// subscribed meanwhile, so every channel syncs from its history as after a Redis
// outage: what a failover lost in transit is filled, and a channel whose
// history went backwards moves to a new epoch (docs/cluster.md).
//
// Threading: everything runs on one strand of the io_context given to
// create(); public methods may be called from any thread (they post to it);
// callbacks run on it and must only hand data on.
// Lifetime: stop() closes every connection (pending commands complete with
// reply::disconnected()); no event follows. Connections and timers hold
// weak references only.
// Errors: never thrown. A failed publish or sync comes back through `done`
// (ok false, with the reason); lost connections are on_down / on_still_down
// events with a one-line reason naming the node.
#pragma once

#include "net/asio.hpp"
#include "net/redis/backend.hpp"
#include "net/redis/cluster_map.hpp"
#include "net/redis/connection.hpp"
#include "net/redis/replica_check.hpp"
#include "net/redis/script_reply.hpp"
#include "net/redis/subscriber.hpp"
#include "net/redis/url.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace herald::net::redis {

class cluster_client : public backend, public std::enable_shared_from_this<cluster_client> {
public:
  struct options {
    cluster_url seeds;       ///< parsed redis+cluster:// --redis-url
    script_settings scripts; ///< prefix, history size and ttl, idempotency window
    /// A reply later than this drops the connection; also the longest a
    /// command waits for its master to be connected.
    std::chrono::milliseconds command_timeout = default_command_timeout;
    /// The slot map is read again this often (and at once after MOVED or a
    /// lost master connection).
    std::chrono::milliseconds refresh_interval{2000};
    /// MOVED / ASK redirections followed for one command before it fails.
    int max_redirects = 5;
    std::function<std::string()> make_epoch; ///< epochs for channels that have none
    /// --redis-wait-replicas: a publication is acknowledged only once this
    /// many replicas of its master confirmed it (Redis WAIT on the master's
    /// connection, bounded by half the command timeout); 0: at once.
    std::size_t wait_replicas = default_wait_replicas;
  };

  /// One master as the client sees it (metrics, tests).
  struct node_state {
    std::string address;           ///< "host:port"
    bool connected = false;        ///< its command connection is up
    std::size_t slots = 0;         ///< slots it serves in the current map
    std::uint64_t reconnects = 0;  ///< command and shard subscriber connections
    std::size_t subscriptions = 0; ///< shard channels its subscriber has confirmed
  };

  /// Makes a client on a new strand of `ioc`. Call start() to connect.
  /// `opts.seeds` must hold at least one seed (parse_cluster_url ensures it).
  static std::shared_ptr<cluster_client> create(asio::io_context& ioc, options opts);

  void publish(const std::string& channel, const publish_args& args,
               std::function<void(publish_result)> done) override;
  /// Probes every master (a key pair whose hash tag falls in one of its
  /// slots): ok only when each took the write.
  void probe_write(std::function<void(publish_result)> done) override;
  void sync(const std::string& channel, std::uint64_t after, const std::string& epoch,
            std::uint64_t delivered, std::function<void(sync_result)> done) override;
  void watch(const std::string& channel) override;
  void unwatch(const std::string& channel) override;
  void start() override;
  void stop() override;

  /// The masters of the current map, in slot order. Strand only (tests post).
  std::vector<node_state> nodes() const;
  /// Slot maps read so far (successful CLUSTER SLOTS). Strand only.
  std::uint64_t map_refreshes() const noexcept { return map_refreshes_; }
  /// MOVED / ASK replies followed so far (also MOVED refusals of
  /// SSUBSCRIBE). Strand only.
  std::uint64_t redirects() const noexcept { return redirects_; }
  /// "host:port" of the node whose shard subscriber has confirmed
  /// `channel`'s SSUBSCRIBE on its current connection; empty when none has
  /// (not watched, moving, or disconnected). Strand only.
  std::string subscribed_node(const std::string& channel) const;
  /// Unasked sunsubscribe pushes and refused SSUBSCRIBEs seen so far
  /// (channels whose slot moved). Strand only.
  std::uint64_t shard_moves() const noexcept { return shard_moves_; }

private:
  struct node {
    node_address address;
    std::shared_ptr<connection> conn;
    script_id publish, sync;
    std::string probe_tag; ///< a hash tag in one of its slots ("herald.probe.<n>")
  };
  enum class script_kind { publish, sync };

  cluster_client(asio::io_context& ioc, options opts);
  url url_of(const node_address& a) const;
  url next_target();
  node& ensure_node(const node_address& a);
  void refresh();
  void arm_refresh();
  void apply_map(slot_map m);
  void update_state(const std::string& reason);
  /// Why the client is not up (empty: it is).
  std::string down_reason() const;
  /// Hands the per-node figures to /metrics (net/obs/metrics_redis.hpp).
  void publish_figures();
  /// Calls on_still_down when not up and the reason changed.
  void report_still_down();
  friend class replica_watch;
  /// --redis-wait-replicas, every second (replicas_): while up, checks each
  /// master (check_master_replicas); the first that falls short is the
  /// reason. @returns false when it cannot check now.
  bool check_replicas(replica_watch::done_fn done);
  /// The shard subscriber of a master, made (and started) on first use.
  subscriber& ensure_sub(const node_address& a);
  /// Subscribes a watched channel on the master of its slot in the map
  /// (moving it from the node it was on); no-op without a map or owner.
  void place(const std::string& channel);
  /// A node's subscriber lost `pubsub` (sunsubscribe push: `error` empty;
  /// or a refused SSUBSCRIBE).
  void on_sub_lost(const std::string& node, const std::string& pubsub, const std::string& error);
  /// Runs a script on the master of `keys[0]`'s slot, following redirections.
  void run(script_kind kind, std::vector<std::string> keys, std::vector<std::string> args,
           reply_fn done, int redirects_left, std::chrono::steady_clock::time_point deadline);
  /// Follows a redirection, or WAITs for replicas after a stored publication.
  void on_script_reply(const std::shared_ptr<connection>& conn, script_kind kind,
                       std::vector<std::string> keys, std::vector<std::string> args, reply_fn done,
                       int redirects_left, std::chrono::steady_clock::time_point deadline, reply r);

  asio::strand<asio::io_context::executor_type> strand_;
  options opts_;
  std::map<std::string, node> nodes_; // by "host:port"
  slot_map map_;
  bool have_map_ = false;
  std::string map_error_;
  std::shared_ptr<connection> topology_;
  std::map<std::string, std::shared_ptr<subscriber>> subs_; // by "host:port"
  std::map<std::string, std::string> placed_; // Herald channel -> node it is subscribed on
  std::uint64_t shard_moves_ = 0;
  asio::steady_timer refresh_timer_;
  unsigned refresh_gen_ = 0;
  bool refresh_in_flight_ = false;
  bool refresh_again_ = false;
  std::size_t rotation_ = 0;
  std::uint64_t map_refreshes_ = 0;
  std::uint64_t redirects_ = 0;
  bool up_ = false;
  std::shared_ptr<replica_watch> replicas_; ///< with --redis-wait-replicas only
  bool stopped_ = false;
  std::string last_still_down_;
  std::set<std::string> watched_; // Herald channels watched (watch() minus unwatch())
};

} // namespace herald::net::redis
