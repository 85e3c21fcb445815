// delivery_service: hands frames from actor threads to sessions on a
// single-threaded io_context in batches.
//
// Without it every delivery is one asio::post onto the session's strand: a
// handler allocated on the actor thread and freed on the I/O thread, the
// strand's mutex, the scheduler's mutex and often an eventfd wake-up of the
// I/O thread, per delivery. With it, a delivery is appended to one shared
// vector under a mutex held for a push_back, and the I/O thread is woken once
// per batch: it then calls every target in order.
//
// Only valid when exactly one thread runs the io_context (`--io-threads=1`,
// the default): the batch then runs each session's code directly, which the
// session's strand would have serialised anyway. With several I/O threads
// sessions keep posting to their strands (`enabled()` is false).
#pragma once

#include "net/asio.hpp"
#include "net/frame.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace herald::net {

/// Something a batch delivers to (a session). Called on the io_context's
/// only thread.
class delivery_target {
public:
  virtual ~delivery_target() = default;
  /// Takes one frame (and its SSE `id:` prefix, maybe empty) in order;
  /// `accepted_ns` as in frame_sink::deliver (0: not timed).
  virtual void on_batched_delivery(std::string prefix, frame body, std::int64_t accepted_ns) = 0;
};

class delivery_service : public asio::execution_context::service {
public:
  using key_type = delivery_service;
  static inline asio::execution_context::id id;

  explicit delivery_service(asio::execution_context& ctx);

  /// Turns batching on; call before any session exists, and only when a
  /// single thread runs the io_context. Off by default.
  void enable(asio::io_context& ioc) noexcept { ioc_ = &ioc; }

  /// True when sessions should call post() instead of posting themselves.
  bool enabled() const noexcept { return ioc_ != nullptr; }

  /// Queues one delivery for `target` (thread-safe, never blocks for long).
  /// Deliveries to one target run in the order they were posted.
  void post(std::shared_ptr<delivery_target> target, std::string prefix, frame body,
            std::int64_t accepted_ns);

private:
  struct item {
    std::shared_ptr<delivery_target> target;
    std::string prefix;
    frame body;
    std::int64_t accepted_ns;
  };

  void drain();
  void shutdown() override;

  asio::io_context* ioc_ = nullptr;
  std::mutex mtx_;
  std::vector<item> pending_; ///< guarded by mtx_
  std::vector<item> running_; ///< only touched by the I/O thread
  bool scheduled_ = false;    ///< guarded by mtx_: a drain is posted
};

} // namespace herald::net
