#include "net/core/listener.hpp"

namespace herald::net {

listener::listener(io_shards& shards, tcp::endpoint endpoint, const session_options& opts,
                   connection_handler on_connection)
  : shards_(shards),
    acceptor_(asio::make_strand(shards.main())),
    retry_timer_(acceptor_.get_executor()),
    opts_(opts),
    on_connection_(std::move(on_connection)),
    per_address_(connection_limit::create(opts.max_connections_per_ip)) {
  acceptor_.open(endpoint.protocol());
  acceptor_.set_option(asio::socket_base::reuse_address(true));
  acceptor_.bind(endpoint);
  acceptor_.listen(asio::socket_base::max_listen_connections);
  acceptor_.non_blocking(true); // the batch after each completed accept
  port_ = acceptor_.local_endpoint().port();
}

void listener::run() {
  asio::dispatch(acceptor_.get_executor(), [self = shared_from_this()] { self->do_accept(); });
}

void listener::stop() {
  asio::post(acceptor_.get_executor(), [self = shared_from_this()] {
    beast::error_code ignored;
    self->acceptor_.close(ignored);
    self->retry_timer_.cancel();
  });
}

void listener::do_accept() {
  acceptor_.async_accept(shards_.next(),
                         [self = shared_from_this()](beast::error_code ec, tcp::socket s) {
                           self->on_accept(ec, std::move(s));
                         });
}

void listener::on_accept(beast::error_code ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted || !acceptor_.is_open())
    return;
  if (ec) {
    if (on_accept_error)
      on_accept_error(ec);
    // Out of files or memory: pause instead of spinning on the error.
    retry_timer_.expires_after(std::chrono::milliseconds(100));
    retry_timer_.async_wait([self = shared_from_this()](beast::error_code wec) {
      if (!wec)
        self->do_accept();
    });
    return;
  }
  take(std::move(socket));
  // Accept batching: the connections already waiting in the backlog are
  // taken now, without a round trip through the reactor each.
  for (std::size_t i = 1; i < max_accepts_per_turn; ++i) {
    tcp::socket next{shards_.next()};
    beast::error_code aec;
    acceptor_.accept(next, aec);
    if (aec)
      break; // would_block: the backlog is empty; other errors: the async accept meets them
    take(std::move(next));
  }
  do_accept();
}

void listener::take(tcp::socket socket) {
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  beast::error_code peer_ec;
  auto peer = socket.remote_endpoint(peer_ec);
  auto slot = peer_ec ? nullptr : per_address_->acquire(peer.address());
  if (!slot) {
    if (!peer_ec) // over the limit (a peer already gone just closes)
      refuse_connection(std::move(socket), opts_.write_timeout, opts_.max_connections_per_ip);
  } else {
    on_connection_(std::move(socket), std::move(slot));
  }
}

} // namespace herald::net
