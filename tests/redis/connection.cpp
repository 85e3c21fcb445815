#include "net/redis/connection.hpp"

#include <catch2/catch.hpp>

#include "client_events.hpp"
#include "io_fixture.hpp"
#include "redis_server.hpp"
#include "started_client.hpp"
#include "stop_on_exit.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace herald::net::redis;
using namespace herald::test;

namespace {

// started_connection against a server that wants the password "s3cret".
struct password_connection : started_connection {
  password_connection()
    : started_connection({"--requirepass", "s3cret"}) {}
};

// A connection where no redis-server of ours listens (yet): a closed port,
// a listener that never accepts. Its events go to rec; the destructor stops
// it, also when a REQUIRE throws. Made by create(), started by the test.
struct serverless_connection {
  io_fixture f;
  link_events rec;
  std::shared_ptr<connection> conn;

  serverless_connection() = default;
  serverless_connection(const serverless_connection&) = delete;
  serverless_connection& operator=(const serverless_connection&) = delete;
  ~serverless_connection() {
    if (conn)
      conn->stop();
  }
  /// Makes the connection with `opts` and attaches rec.
  void create(const connection_options& opts) {
    conn = connection::create(f.ex, opts);
    rec.attach(*conn);
  }
};

// started_connection whose only timeout is the command timeout, with the
// replies a test collects and a BLPOP that Redis never answers.
struct command_timeout_connection : started_connection {
  std::vector<reply> got; ///< replies in arrival order
  /// From the time given to blpop_forever() to the BLPOP's reply.
  std::chrono::steady_clock::duration blpop_after{};

  /// Stops the connection while `got` still exists (its pending callbacks
  /// run with reply::disconnected()); the base's stop() is then a no-op.
  ~command_timeout_connection() {
    if (conn)
      conn->stop();
  }

  /// Creates and starts the connection with `timeout` as its command
  /// timeout and no heartbeat (so only the command timeout may fire).
  void start_with(std::chrono::milliseconds timeout) {
    auto opts = test_options(srv.url());
    opts.command_timeout = timeout;
    opts.heartbeat_interval = 0ms;
    create(opts);
    start();
  }
  /// Sends `args`; the reply goes to `got`.
  void send(std::vector<std::string> args) {
    conn->command(std::move(args), [this](reply r) { got.push_back(std::move(r)); });
  }
  /// Sends BLPOP without a timeout, which Redis never answers: its reply
  /// (the connection's loss) goes to `got`, the time from `since` to it to
  /// blpop_after.
  void blpop_forever(std::chrono::steady_clock::time_point since) {
    conn->command({"BLPOP", "never", "0"}, [this, since](reply r) {
      blpop_after = std::chrono::steady_clock::now() - since;
      got.push_back(std::move(r));
    });
  }
  /// The connection was dropped once, for a late reply.
  void check_dropped_for_late_reply() {
    CHECK(conn->counters().command_timeouts == 1);
    REQUIRE(rec.downs == 1);
    CHECK_THAT(rec.down_reasons[0], Catch::Contains("command timeout"));
  }
};

} // namespace

TEST_CASE_METHOD(started_connection, "connection: commands and every reply kind",
                 "[redis][connection]") {
  start();
  CHECK(conn->connected());

  std::vector<reply> got;
  auto keep = [&](reply r) { got.push_back(std::move(r)); };
  const std::string binary("a\0b\r\nc", 6);
  std::vector<std::vector<std::string>> commands = {
    {"SET", "k", "v"},                        // 0 status
    {"GET", "k"},                             // 1 string
    {"GET", "missing"},                       // 2 nil
    {"INCR", "k"},                            // 3 error
    {"INCRBY", "n", "5"},                     // 4 integer
    {"SET", "bin", binary},                   // 5
    {"GET", "bin"},                           // 6 binary string
    {"XADD", "s", "1-1", "f", "v"},           // 7
    {"XADD", "s", "2-1", "a", "b", "c", "d"}, // 8
    {"XRANGE", "s", "-", "+"},                // 9 nested arrays
    {"LRANGE", "nolist", "0", "-1"},          // 10 empty array
    {"BLPOP", "nolist", "0.01"},              // 11 nil array
    {"NOSUCHCOMMAND"},                        // 12 error
  };
  for (auto& c : commands)
    CHECK(conn->command(c, keep));
  REQUIRE(f.run_until([&] { return got.size() == commands.size(); }, 5s));

  CHECK(got[0].type == reply::status);
  CHECK(got[0].str == "OK");
  CHECK(got[1].type == reply::string);
  CHECK(got[1].str == "v");
  CHECK(got[2].is_nil());
  CHECK(got[3].is_error());
  CHECK(got[3].has_error_code("ERR"));
  CHECK_FALSE(got[3].is_disconnected());
  CHECK(got[4].type == reply::integer);
  CHECK(got[4].number == 5);
  CHECK(got[6].str == binary);
  CHECK(got[7].str == "1-1");
  CHECK(got[9].to_string() == R"([["1-1",["f","v"]],["2-1",["a","b","c","d"]]])");
  REQUIRE(got[9].elements.size() == 2);
  CHECK(got[9].elements[1].elements[1].elements[3].str == "d");
  CHECK(got[10].type == reply::array);
  CHECK(got[10].elements.empty());
  CHECK(got[11].is_nil());
  CHECK(got[12].is_error());
  CHECK(conn->in_flight() == 0);
  CHECK(rec.downs == 0);
}

TEST_CASE_METHOD(started_connection, "connection: 10,000 pipelined PINGs, replies in order",
                 "[redis][connection]") {
  start();

  constexpr int n = 10000;
  std::vector<int> order;
  order.reserve(n);
  int pongs = 0;
  std::size_t max_in_flight = 0;
  for (int i = 0; i < n; ++i) {
    conn->command({"PING"}, [&, i](reply r) {
      order.push_back(i);
      if (r.type == reply::status && r.str == "PONG")
        ++pongs;
    });
    max_in_flight = std::max(max_in_flight, conn->in_flight());
  }
  CHECK(max_in_flight >= static_cast<std::size_t>(n));
  REQUIRE(f.run_until([&] { return order.size() == static_cast<std::size_t>(n); }, 10s));
  CHECK(pongs == n);
  bool in_order = true;
  for (int i = 0; i < n; ++i)
    in_order = in_order && order[static_cast<std::size_t>(i)] == i;
  CHECK(in_order);
  CHECK(rec.downs == 0);
}

TEST_CASE("connection: on a strand with two io threads", "[redis][connection]") {
  redis_server srv;
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  auto strand = boost::asio::make_strand(io);
  auto conn = connection::create(strand, test_options(srv.url()));
  std::atomic<bool> up{false};
  std::atomic<int> replies{0};
  std::atomic<bool> off_strand{false};
  constexpr int n = 5000;
  conn->on_up = [&] {
    up = true;
    for (int i = 0; i < n; ++i)
      conn->command({"INCR", "counter"}, [&](reply r) {
        if (!strand.running_in_this_thread())
          off_strand = true;
        if (r.type == reply::integer)
          ++replies;
      });
  };
  boost::asio::post(strand, [&] { conn->start(); });
  std::thread t1([&] { io.run(); });
  std::thread t2([&] { io.run(); });
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (replies < n && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  std::atomic<bool> stopped{false};
  boost::asio::post(strand, [&] {
    conn->stop();
    stopped = true;
  });
  while (!stopped)
    std::this_thread::sleep_for(1ms);
  work.reset();
  io.stop();
  t1.join();
  t2.join();
  CHECK(up);
  CHECK(replies == n);
  CHECK_FALSE(off_strand);
  CHECK(srv.command({"GET", "counter"}).str == std::to_string(n));
}

TEST_CASE_METHOD(started_connection,
                 "connection: EVALSHA with NOSCRIPT fallback, also after a restart",
                 "[redis][connection][script]") {
  create();
  const std::string source = "return ARGV[1] .. ':' .. KEYS[1]";
  auto script = conn->add_script(source);
  auto broken = conn->add_script("return +");                   // does not compile
  auto failing = conn->add_script("return redis.call('NOPE')"); // fails when run
  start();

  // The handshake loaded it: the sha is Redis's own.
  auto sha = srv.command({"SCRIPT", "LOAD", source});
  REQUIRE(sha.type == reply::string);
  CHECK(conn->script_sha(script) == sha.str);
  CHECK(conn->script_sha(broken).empty());

  std::vector<reply> got;
  auto keep = [&](reply r) { got.push_back(std::move(r)); };
  auto run = [&](herald::net::redis::script_id id) {
    got.clear();
    CHECK(conn->eval_script(id, {"key"}, {"arg"}, keep));
    REQUIRE(f.run_until([&] { return got.size() == 1; }, 3s));
    return got.front();
  };

  CHECK(run(script).str == "arg:key");
  CHECK(conn->counters().script_fallbacks == 0);

  SECTION("SCRIPT FLUSH: NOSCRIPT, then EVAL, then EVALSHA works again") {
    CHECK(srv.command({"SCRIPT", "FLUSH"}).str == "OK");
    CHECK(run(script).str == "arg:key");
    CHECK(conn->counters().script_fallbacks == 1);
    CHECK(run(script).str == "arg:key");
    CHECK(conn->counters().script_fallbacks == 1);
  }

  SECTION("restart: reconnect reloads the script; a flush after that falls back") {
    srv.stop();
    REQUIRE(f.run_until([&] { return rec.downs == 1; }, 3s));
    srv.start();
    REQUIRE(f.run_until([&] { return rec.up; }, 3s));
    CHECK(conn->counters().reconnects == 1);
    CHECK(srv.command({"SCRIPT", "EXISTS", sha.str}).to_string() == "[1]");
    CHECK(run(script).str == "arg:key");
    CHECK(conn->counters().script_fallbacks == 0);
    srv.command({"SCRIPT", "FLUSH"});
    CHECK(run(script).str == "arg:key");
    CHECK(conn->counters().script_fallbacks == 1);
  }

  SECTION("script errors reach the callback") {
    auto r = run(broken);
    CHECK(r.is_error());
    CHECK_FALSE(r.is_disconnected());
    r = run(failing);
    CHECK(r.is_error());
    CHECK_FALSE(r.is_disconnected());
  }
}

TEST_CASE_METHOD(command_timeout_connection,
                 "connection: a command without reply times out and reconnects",
                 "[redis][connection][timeout]") {
  start_with(300ms);
  blpop_forever(std::chrono::steady_clock::now());
  send({"GET", "x"}); // waits behind the BLPOP
  REQUIRE(f.run_until([&] { return got.size() == 2; }, 3s));
  CHECK(got[0].is_disconnected());
  CHECK(got[1].is_disconnected());
  CHECK(blpop_after >= 300ms);
  CHECK(blpop_after < 1500ms);
  check_dropped_for_late_reply();

  REQUIRE(f.run_until([&] { return rec.ups == 2; }, 3s));
  got.clear();
  send({"PING"});
  REQUIRE(f.run_until([&] { return got.size() == 1; }, 3s));
  CHECK(got[0].str == "PONG");
  CHECK(conn->counters().reconnects == 1);
}

TEST_CASE_METHOD(serverless_connection,
                 "connection: a closed port is retried with backoff, then connects",
                 "[redis][connection][backoff]") {
  auto port = redis_server::free_port();
  create(test_options("redis://127.0.0.1:" + std::to_string(port)));
  conn->start();
  f.run_for(1000ms);
  CHECK_FALSE(rec.up);
  CHECK_FALSE(conn->connected());
  auto failures = conn->counters().connect_failures;
  // 20 ms doubling to 300 ms, each drawn from [d/2, d]: 5 to 13 in 1 s.
  CHECK(failures >= 4);
  CHECK(failures <= 20);
  CHECK_THAT(conn->last_error(), Catch::Contains("refused"));

  // Commands fail fast with the disconnected reply, never inline.
  bool called = false;
  reply got;
  CHECK_FALSE(conn->command({"PING"}, [&](reply r) {
    called = true;
    got = std::move(r);
  }));
  CHECK_FALSE(called);
  REQUIRE(f.run_until([&] { return called; }, 1s));
  CHECK(got.is_disconnected());

  redis_server srv({}, port);
  REQUIRE(f.run_until([&] { return rec.up; }, 2s));
  CHECK(rec.downs == 0);
  CHECK(conn->counters().connects == 1);
}

TEST_CASE_METHOD(serverless_connection,
                 "connection: a TCP connect that hangs is cut by the connect timeout",
                 "[redis][connection][timeout]") {
  // A listener that never accepts, with its backlog full: the kernel drops
  // further SYNs, so connect() neither succeeds nor fails.
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(listener >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(listener, 0) == 0);
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    fillers.push_back(fd);
  }
  std::this_thread::sleep_for(100ms);

  auto opts = test_options("redis://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)));
  opts.connect_timeout = 200ms;
  create(opts);
  conn->start();
  f.run_for(900ms);
  CHECK_FALSE(rec.up);
  CHECK(conn->counters().connect_failures >= 2);
  CHECK_THAT(conn->last_error(), Catch::Contains("connect timeout after 200 ms (TCP connect)"));
  conn->stop(); // before the listener goes
  for (int fd : fillers)
    ::close(fd);
  ::close(listener);
}

TEST_CASE_METHOD(started_connection, "connection: a host name is resolved without blocking",
                 "[redis][connection]") {
  create(test_options("redis://localhost:" + std::to_string(srv.port())));
  start();
}

TEST_CASE_METHOD(password_connection,
                 "connection: AUTH, SELECT and CLIENT SETNAME from the options",
                 "[redis][connection][auth]") {
  const std::string hostport = "127.0.0.1:" + std::to_string(srv.port());

  SECTION("password and database") {
    auto opts = test_options("redis://:s3cret@" + hostport + "/2");
    opts.client_name = "herald-test";
    create(opts);
    start();
    std::vector<reply> got;
    conn->command({"CLIENT", "INFO"}, [&](reply r) { got.push_back(std::move(r)); });
    REQUIRE(f.run_until([&] { return got.size() == 1; }, 3s));
    CHECK_THAT(got[0].str, Catch::Contains(" db=2 "));
    CHECK_THAT(got[0].str, Catch::Contains(" name=herald-test "));
  }

  SECTION("user and password (ACL default user)") {
    create(test_options("redis://default:s3cret@" + hostport));
    start();
  }

  SECTION("wrong password: never up, retried with backoff") {
    create(test_options("redis://:wrong@" + hostport));
    conn->start();
    f.run_for(600ms);
    CHECK_FALSE(rec.up);
    CHECK(conn->counters().connect_failures >= 2);
    CHECK_THAT(conn->last_error(), Catch::Contains("AUTH failed"));
  }

  SECTION("no password: the handshake reports NOAUTH") {
    create(test_options("redis://" + hostport));
    conn->start();
    f.run_for(300ms);
    CHECK_FALSE(rec.up);
    CHECK_THAT(conn->last_error(), Catch::Contains("NOAUTH"));
  }

  SECTION("every failed attempt is reported with its reason (on_attempt_failed)") {
    // Was: nothing told the owner why a connection that never came up failed.
    create(test_options("redis://:wrong@" + hostport));
    std::vector<std::string> reasons;
    conn->on_attempt_failed = [&](const std::string& why) { reasons.push_back(why); };
    conn->start();
    REQUIRE(f.run_until([&] { return reasons.size() >= 2; }, 3s));
    CHECK_THAT(reasons[0], Catch::Contains("AUTH failed") && Catch::Contains("WRONGPASS"));
    CHECK(reasons[0] == conn->last_error());
    CHECK(rec.downs == 0); // never up: no on_down
  }
}

TEST_CASE_METHOD(started_connection,
                 "connection: a server that closes each connection right after the handshake is "
                 "retried with growing backoff",
                 "[redis][connection][backoff]") {
  // Was: the backoff was reset by every handshake, so a connection closed
  // at once after it (here by a client-side drop in on_up, as an ACL
  // refusing the first command does) reconnected every 10-20 ms.
  create(); // 20 ms doubling to 300 ms
  conn->on_up = [&] {
    ++rec.ups;
    conn->drop("closed right after the handshake");
  };
  conn->start();
  f.run_for(1000ms);
  // Delays drawn from [d/2, d] with d = 20, 40, 80, 160, 300, 300 ...: at
  // least 10, 20, 40, 80, 150, 150 ... ms, so at most 10 connects in 1 s
  // (a reset backoff gives 50 or more).
  CHECK(rec.ups >= 3);
  CHECK(rec.ups <= 10);
  CHECK(conn->counters().connects == static_cast<std::uint64_t>(rec.ups));
}

TEST_CASE_METHOD(started_connection,
                 "connection: the backoff starts again from the minimum after a connection that "
                 "lasted",
                 "[redis][connection][backoff]") {
  auto opts = test_options(srv.url());
  opts.max_backoff = 100ms;
  create(opts);
  start(); // REQUIREs on_up within 3 s
  for (int i = 0; i < 3; ++i) {
    f.run_for(150ms); // longer than max_backoff: a healthy connection
    auto before = std::chrono::steady_clock::now();
    auto ups = rec.ups;
    conn->drop("test");
    REQUIRE(f.run_until([&] { return rec.ups == ups + 1; }, 3s));
    // Reconnected after at most min_backoff (20 ms) plus the handshake.
    CHECK(std::chrono::steady_clock::now() - before < 90ms);
  }
}

TEST_CASE_METHOD(started_connection,
                 "connection: stop() fails pending commands and ends everything",
                 "[redis][connection]") {
  start();

  std::vector<reply> got;
  conn->command({"BLPOP", "never", "0"}, [&](reply r) { got.push_back(std::move(r)); });
  f.run_for(50ms);
  conn->stop();
  REQUIRE(got.size() == 1); // synchronously, outside a callback
  CHECK(got[0].is_disconnected());
  CHECK_FALSE(conn->connected());
  f.run_for(300ms);
  CHECK(rec.downs == 0); // stop() reports no on_down
  CHECK(conn->counters().connect_attempts == 1);

  std::weak_ptr<connection> weak = conn;
  conn.reset();
  f.run_for(20ms);
  CHECK(weak.expired()); // nothing keeps a stopped connection alive
}

TEST_CASE("connection: stop() and drop() from inside callbacks", "[redis][connection]") {
  io_fixture f;
  redis_server srv;

  SECTION("stop() in on_up") {
    auto conn = connection::create(f.ex, test_options(srv.url()));
    int ups = 0;
    conn->on_up = [&] {
      ++ups;
      conn->stop();
    };
    conn->start();
    f.run_for(500ms);
    CHECK(ups == 1);
    CHECK_FALSE(conn->connected());
  }

  SECTION("drop() in on_up reconnects") {
    auto conn = connection::create(f.ex, test_options(srv.url()));
    stop_on_exit guard{conn};
    int ups = 0;
    int downs = 0;
    conn->on_up = [&] {
      if (++ups == 1)
        conn->drop("test drop");
    };
    conn->on_down = [&](const std::string& why) {
      ++downs;
      CHECK(why == "test drop");
    };
    conn->start();
    REQUIRE(f.run_until([&] { return ups == 2; }, 3s));
    CHECK(downs == 1);
  }

  SECTION("stop() in a reply callback fails the commands behind it") {
    auto conn = connection::create(f.ex, test_options(srv.url()));
    bool up = false;
    conn->on_up = [&] { up = true; };
    conn->start();
    REQUIRE(f.run_until([&] { return up; }, 3s));
    std::vector<reply> got;
    conn->command({"PING"}, [&](reply r) {
      got.push_back(std::move(r));
      conn->stop();
    });
    conn->command({"PING"}, [&](reply r) { got.push_back(std::move(r)); });
    REQUIRE(f.run_until([&] { return got.size() == 2; }, 3s));
    CHECK(got[0].str == "PONG");
    CHECK(got[1].is_disconnected());
  }
}

// Issue 19: Redis runs a connection's commands one after the other, so a
// command behind blocking WAITs starts late. Its timeout (and a heartbeat
// PING's) counts from when Redis could start it: a healthy master that
// answers every WAIT is never dropped. Before, the GET below timed out 600 ms
// after its sending although Redis answered everything.
TEST_CASE_METHOD(started_connection, "connection: commands behind blocking WAITs do not time out",
                 "[redis][connection][timeout]") {
  auto opts = test_options(srv.url());
  opts.command_timeout = 600ms;
  opts.heartbeat_interval = 100ms;
  opts.heartbeat_timeout = 600ms;
  create(opts);
  start();

  // No replica: each WAIT 1 400 blocks 400 ms, then answers 0.
  std::vector<reply> got;
  auto sent = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; ++i)
    conn->command({"WAIT", "1", "400"}, [&](reply r) { got.push_back(std::move(r)); });
  conn->command({"GET", "x"}, [&](reply r) { got.push_back(std::move(r)); });
  REQUIRE(f.run_until([&] { return got.size() == 5; }, 5s));
  auto took = std::chrono::steady_clock::now() - sent;
  for (int i = 0; i < 4; ++i) {
    INFO("WAIT " << i << ": " << got[i].to_string());
    CHECK(got[i].type == reply::integer);
    CHECK(got[i].number == 0);
  }
  CHECK(got[4].is_nil());
  CHECK(took >= 1600ms); // the GET really waited behind the WAITs
  CHECK(conn->counters().command_timeouts == 0);
  CHECK(conn->counters().heartbeat_timeouts == 0);
  CHECK(rec.downs == 0);
  CHECK(conn->connected());
}

// The same accounting still drops a connection whose command gets no reply:
// from when the WAIT before it answered, not from its sending.
TEST_CASE_METHOD(command_timeout_connection,
                 "connection: a command without reply times out from when Redis could start it",
                 "[redis][connection][timeout]") {
  start_with(500ms);
  auto sent = std::chrono::steady_clock::now();
  send({"WAIT", "1", "300"});
  blpop_forever(sent);
  REQUIRE(f.run_until([&] { return got.size() == 2; }, 4s));
  CHECK(got[0].type == reply::integer);
  REQUIRE(got[1].is_disconnected());
  CHECK_FALSE(got[1].never_sent); // written: Redis was running it
  CHECK(blpop_after >= 800ms);    // 300 ms of WAIT, then 500 ms of its own
  CHECK(blpop_after < 2000ms);
  check_dropped_for_late_reply();
}

// Whether Redis may have run a command whose reply never came: only a
// command whose bytes all left may have run (reply::never_sent false).
TEST_CASE_METHOD(started_connection, "connection: a lost command says whether it was written",
                 "[redis][connection]") {
  start();
  std::vector<reply> got;

  SECTION("not connected: not sent") {
    conn->drop("test: gone before the command");
    REQUIRE_FALSE(conn->command({"SET", "k", "v"}, [&](reply r) { got.push_back(std::move(r)); }));
    REQUIRE(f.run_until([&] { return got.size() == 1; }, 1s));
    CHECK(got[0].is_disconnected());
    CHECK(got[0].never_sent);
  }
  SECTION("dropped before its bytes left: not sent, and Redis has nothing") {
    // hiredis writes when Asio reports the socket writable, after this
    // handler: the drop comes first.
    REQUIRE(conn->command({"SET", "k", "v"}, [&](reply r) { got.push_back(std::move(r)); }));
    conn->drop("test: dropped before the write");
    REQUIRE(f.run_until([&] { return got.size() == 1; }, 1s));
    CHECK(got[0].is_disconnected());
    CHECK(got[0].never_sent);
    CHECK(srv.command({"EXISTS", "k"}).number == 0);
  }
  SECTION("dropped after its bytes left: may have run, and did") {
    // A SET written, then a BLPOP that Redis holds: the drop comes while
    // Redis has run the SET and blocks in the BLPOP.
    REQUIRE(conn->command({"SET", "k", "v"}));
    REQUIRE(conn->command({"BLPOP", "never", "0"}, [&](reply r) { got.push_back(std::move(r)); }));
    REQUIRE(f.run_until(
      [&] {
        auto info = srv.command({"INFO", "clients"});
        return info.str.find("blocked_clients:1") != std::string::npos;
      },
      2s));
    conn->drop("test: dropped after the write");
    REQUIRE(f.run_until([&] { return got.size() == 1; }, 1s));
    CHECK(got[0].is_disconnected());
    CHECK_FALSE(got[0].never_sent);
    CHECK(srv.command({"GET", "k"}).str == "v");
  }
}
