// started_client: the set-up the connection and subscriber tests share, as
// a Catch2 fixture (TEST_CASE_METHOD):
//   f    an io_fixture: the io_context the test thread runs in slices;
//   srv  a real redis-server on a free loopback port, started by the
//        constructor (with the given extra arguments, e.g. a password);
//   the client under test (connection or subscriber), created on f.ex by
//        create() or start(), its events recorded in rec; a subscriber in
//        the fixture's `mode` (a test sets it first, e.g. from GENERATE).
// Lifetimes: the destructor stops the client if the test still holds it (a
// test may stop() it or reset() the pointer itself, e.g. to see it freed),
// then rec, the client pointer, the server (stopped by PID) and the
// io_context go, in that order. Also when a REQUIRE throws.
#pragma once

#include "client_events.hpp"
#include "io_fixture.hpp"
#include "net/redis/connection.hpp"
#include "net/redis/subscriber.hpp"
#include "redis_server.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace herald::test {

template <class Client, class Events>
class started_client {
public:
  io_fixture f;
  redis_server srv;
  std::shared_ptr<Client> client;
  Events rec;

  explicit started_client(std::vector<std::string> server_args = {})
    : srv(std::move(server_args)) {
    if constexpr (std::is_same_v<Client, net::redis::connection>)
      make = [this](const net::redis::connection_options& opts) {
        return Client::create(f.ex, opts);
      };
  }
  ~started_client() {
    if (client)
      client->stop();
  }
  started_client(const started_client&) = delete;
  started_client& operator=(const started_client&) = delete;

  /// Creates the client with `opts` and attaches rec (not started yet).
  Client& create(const net::redis::connection_options& opts) {
    client = make(opts);
    rec.attach(*client);
    return *client;
  }
  /// The same with test_options(srv.url()).
  Client& create() { return create(test_options(srv.url())); }

  /// Starts the client (created with test_options(srv.url()) if create()
  /// was not called) and REQUIREs its on_up within 3 s.
  void start() {
    if (!client)
      create();
    client->start();
    REQUIRE(f.run_until([this] { return rec.up; }, std::chrono::seconds(3)));
  }

protected:
  /// How create() makes the client (a subscriber also needs its mode).
  std::function<std::shared_ptr<Client>(const net::redis::connection_options&)> make;
};

/// A connection; `conn` names the client.
struct started_connection : started_client<net::redis::connection, link_events> {
  using started_client::started_client;
  std::shared_ptr<net::redis::connection>& conn = client;
};

/// A subscriber in `mode` (classic unless the test sets it before
/// create() or start()); `sub` names the client.
struct started_subscriber : started_client<net::redis::subscriber, pubsub_events> {
  explicit started_subscriber(std::vector<std::string> server_args = {})
    : started_client(std::move(server_args)) {
    make = [this](const net::redis::connection_options& opts) {
      return net::redis::subscriber::create(f.ex, opts, mode);
    };
  }
  net::redis::pubsub_mode mode = net::redis::pubsub_mode::classic;
  std::shared_ptr<net::redis::subscriber>& sub = client;
};

} // namespace herald::test
