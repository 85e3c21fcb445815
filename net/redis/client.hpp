// client: the Redis backend of cluster mode (backend.hpp) on hiredis and
// Asio. Created by app/server when --redis-url is set, owned by the Redis
// gateway actor. It runs a small pool of command connections (publish and
// sync scripts, pipelined, each command with a timeout) and one pub/sub
// subscriber, all on one strand of the network's io_context: no thread per
// command. It reports "up" when the subscriber has every wanted channel
// confirmed and at least one command connection is connected, and "down"
// when either is lost; while not up, each new reason an attempt failed
// (connection refused, AUTH failed, NOPERM ...) through on_still_down. The
// connections reconnect by themselves with capped exponential backoff and
// jitter (net/redis/backoff.hpp). Every name it uses in Redis starts with
// the prefix (keys and pub/sub channels; the subscriber's heartbeat is a
// PING, which names nothing). A SUBSCRIBE that Redis refuses (NOPERM: an
// ACL without the prefix's channels) makes it down, with a reason naming
// the channel, until a resubscription succeeds. Every public method may be
// called from any thread (it posts to the strand); callbacks run on the
// strand. Errors are never thrown: a failed publish or sync comes back
// through `done` (ok false, with the reason); the state changes are
// on_up / on_down / on_still_down with a one-line reason.
#pragma once

#include "net/asio.hpp"
#include "net/redis/backend.hpp"
#include "net/redis/script_reply.hpp"
#include "net/redis/url.hpp"
#include "net/wire/channel_class.hpp"
#include "net/wire/history_bounds.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace herald::net::redis {

/// The single-server backend's options and factory (the backend itself is
/// private to client.cpp: callers hold it as a `backend`).
class client {
public:
  struct options {
    url target;                                    ///< parsed --redis-url
    std::string prefix = script_settings{}.prefix; ///< --redis-prefix
    std::size_t pool_size = 2;                     ///< command connections
    std::chrono::milliseconds command_timeout = default_command_timeout;
    std::size_t history_size = history_bounds::size; ///< stream length (MAXLEN) per channel
    std::chrono::seconds history_ttl =
      history_bounds::ttl; ///< key expiry after the last publication
    std::chrono::seconds idempotency_window = history_bounds::idempotency_window; ///< keys' expiry
    std::function<std::string()> make_epoch; ///< epochs for channels that have none
    /// --redis-wait-replicas: a publication is acknowledged only once this
    /// many replicas confirmed it (Redis WAIT, bounded by half the command
    /// timeout); 0: as soon as the master stored it.
    std::size_t wait_replicas = default_wait_replicas;
    /// --channel-classes: per-class history size and ttl (null: the two above).
    std::shared_ptr<const channel_classes> classes;
  };

  /// Makes the backend on a new strand of `ioc`. Call start() to connect.
  static std::shared_ptr<backend> create(asio::io_context& ioc, options opts);
};

} // namespace herald::net::redis
