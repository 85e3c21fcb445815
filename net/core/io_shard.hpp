// io_shard: one I/O shard, an io_context run by exactly one thread, and the
// queue through which other threads reach the sessions living on it
// (net/fanout.hpp). io_shards: the server's set of shards (--io-threads).
//
// Threads and lifetimes: a connection is accepted onto one shard and every
// handler of its session runs on that shard's thread, so session code needs
// no strand and no lock. Actor threads call shard::fanout/answer/post, which
// append to one vector under a mutex held for a push_back; the shard's thread
// is woken once per batch (one asio::post) and runs the queue in order.
//
// Turn budget: one run of the queue makes at most `turn_budget` deliveries
// (a fan-out item counts one per session, any other item one), then posts
// itself again behind the handlers that are ready meanwhile (accepts,
// upgrade requests, first subscribes of new connections, reads), so a
// backlog of fan-out and replays delays a newcomer by one budget's worth of
// work, not by the whole backlog. The order of the queue is kept.
#pragma once

#include "net/asio.hpp"
#include "net/fanout.hpp"

#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace herald::net {

class io_shard final : public asio::execution_context::service, public shard {
public:
  /// Deliveries one run of the queue makes before it yields to the other
  /// handlers of the shard's io_context (about 0.5 ms of work).
  static constexpr std::size_t turn_budget = 1024;

  using key_type = io_shard;
  static inline asio::execution_context::id id;

  explicit io_shard(asio::execution_context& ctx);

  /// The io_context this shard's queue runs on. Found through
  /// asio::use_service<io_shard>(ioc), which creates the shard on first use.
  static io_shard& of(asio::io_context& ioc);
  /// The shard of an I/O object's executor (a socket's, a timer's).
  static io_shard& of(const asio::any_io_executor& ex);

  /// Index of the shard in its io_shards (0 for a lone io_context).
  std::size_t index() const noexcept { return index_; }

  // -- shard (any thread) -------------------------------------------------
  void fanout(publication_ptr p, subscriber_list_ptr list) override;
  void answer(std::shared_ptr<delivery_sink> to, subscription_answer answer) override;
  void post(std::function<void()> task) override;

private:
  friend class io_shards;
  struct item {
    publication_ptr pub;        ///< fan-out: the publication ...
    subscriber_list_ptr list;   ///< ... and the sessions it goes to
    std::function<void()> task; ///< otherwise: a task
  };

  void push(item it);
  /// Runs the queue for one turn (see "Turn budget" above).
  void drain();
  void shutdown() override;

  asio::io_context* ioc_ = nullptr;
  std::size_t index_ = 0;
  std::mutex mtx_;
  std::vector<item> pending_; ///< guarded by mtx_
  std::vector<item> running_; ///< only touched by the shard's thread
  std::size_t next_ = 0;      ///< running_[next_] is the next item to run
  std::size_t next_session_ = 0; ///< ...and, for a fan-out, its next session
  /// guarded by mtx_: a drain is posted (or running), and runs until both
  /// queues are empty; push() posts one only when this is false
  bool scheduled_ = false;
};

/// The server's I/O shards: `count` io_contexts, each run by its own thread.
class io_shards {
public:
  /// @param count number of shards (>= 1; 0 is taken as 1).
  explicit io_shards(std::size_t count);
  ~io_shards();
  io_shards(const io_shards&) = delete;
  io_shards& operator=(const io_shards&) = delete;

  std::size_t size() const noexcept { return contexts_.size(); }
  /// Shard `i`'s io_context. Shard 0 also runs the listener, the Redis
  /// client, signals and timers of the server as a whole.
  asio::io_context& context(std::size_t i) { return *contexts_.at(i); }
  asio::io_context& main() { return *contexts_.front(); }
  /// The next shard in round robin, for a newly accepted connection. Any thread.
  asio::io_context& next() noexcept;

  /// Runs every shard: shards 1..n-1 on threads of their own (kept alive by
  /// work guards until stop()), shard 0 on the calling thread. Returns once
  /// shard 0's io_context stopped and the other threads were joined.
  void run();
  /// Stops every shard. Any thread.
  void stop();

private:
  std::vector<std::unique_ptr<asio::io_context>> contexts_;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::vector<std::thread> threads_;
  std::atomic<std::size_t> next_{0};
};

} // namespace herald::net
