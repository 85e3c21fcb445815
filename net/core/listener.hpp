// listener: accepts TCP connections on the next I/O shard in round robin
// (net/core/io_shard.hpp) and hands each to `on_connection` (app/server
// starts an http_session there: net/core knows no protocol); the connection
// lives on that shard's thread for its life. Created by app/server; accepts
// on shard 0 until stop(). Each completed accept also takes, without
// waiting, up to 63 more connections already in the backlog (a reconnect
// storm's clients arrive together). Accept errors (for example EMFILE at the file limit) are logged by
// the caller's callback and retried after a short pause; they never stop it.
// A client address already holding --max-connections-per-ip connections gets
// 429 too_many_connections and is closed (net/core/connection_limit.hpp).
#pragma once

#include "net/asio.hpp"
#include "net/core/connection_limit.hpp"
#include "net/core/io_shard.hpp"
#include "net/core/session_options.hpp"

#include <functional>
#include <memory>

namespace herald::net {

class listener : public std::enable_shared_from_this<listener> {
public:
  /// Binds and listens on `endpoint` (port 0 picks a free port); accepts on
  /// shard 0 and spreads connections over `shards`. Throws
  /// boost::system::system_error when the address cannot be bound (start-up
  /// only).
  /// `on_connection` is called on the acceptor's strand (shard 0) with the
  /// socket, already bound to its shard's executor, and its per-address slot (released when the last copy is gone:
  /// keep it for the connection's life).
  using connection_handler = std::function<void(tcp::socket socket, std::shared_ptr<void> slot)>;
  listener(io_shards& shards, tcp::endpoint endpoint, const session_options& opts,
           connection_handler on_connection);

  /// Starts accepting. Thread-safe.
  void run();
  /// Stops accepting; open connections are not touched. Thread-safe.
  void stop();
  /// The bound port.
  unsigned short port() const noexcept { return port_; }

  /// Called (on an io thread) when accept fails, with the error.
  std::function<void(const boost::system::error_code&)> on_accept_error;

private:
  void do_accept();
  void on_accept(beast::error_code ec, tcp::socket socket);
  /// One accepted connection: its per-address slot, then on_connection_.
  void take(tcp::socket socket);
  /// Connections taken per completed accept (the first one and those
  /// already waiting in the backlog).
  static constexpr std::size_t max_accepts_per_turn = 64;

  io_shards& shards_;
  tcp::acceptor acceptor_;
  asio::steady_timer retry_timer_;
  session_options opts_;
  connection_handler on_connection_;
  std::shared_ptr<connection_limit> per_address_; ///< --max-connections-per-ip
  unsigned short port_ = 0;
};

} // namespace herald::net
