// connection_fixture: a real channel registry and a recording_sink standing
// in for one connection's session, with the helpers the connection actor
// suites share (actors.connection_actor, actors.connection_auth). Include
// last (it includes fixture.hpp, whose caf/test/dsl.hpp defines macros).
#pragma once

#include "actors/channel_registry.hpp"
#include "actors/connection_actor.hpp"
#include "recording_sink.hpp"

#include <nlohmann/json.hpp>

#include "fixture.hpp"

#include <deque>
#include <string>
#include <vector>

namespace herald::test {

using namespace herald::actors;
using namespace std::chrono_literals;
using nlohmann::json;

inline const std::string user_a = "user:GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ";

// A real registry (history of 16 for 60 s, every epoch "ep") and one
// recording_sink that stands in for the session of each connection actor.
struct connection_fixture : actor_fixture {
  caf::actor reg = spawn_registry(history_options{16, 60s}, [] { return std::string{"ep"}; });
  std::shared_ptr<test::recording_sink> sink = std::make_shared<recording_sink>();

  // A connection actor with `opts`, no channels and no cursor yet.
  caf::actor ws_conn(const connection_options& opts) {
    auto a = sys.spawn(connection_actor, std::shared_ptr<net::session_control>(sink), reg, opts,
                       std::vector<std::string>{}, std::vector<net::sse::cursor_entry>{});
    spawned.push_back(a);
    sched.run();
    return a;
  }

  caf::actor ws_conn(std::size_t max_channels = 64, std::size_t max_subscribe_attempts = 0) {
    connection_options opts;
    opts.kind = transport::ws;
    opts.max_channels = max_channels;
    opts.max_subscribe_attempts = max_subscribe_attempts;
    return ws_conn(opts);
  }

  caf::actor sse_conn(std::vector<std::string> channels,
                      std::vector<net::sse::cursor_entry> cursor = {}) {
    sink->use(net::metrics::transport::sse);
    connection_options opts;
    opts.kind = transport::sse;
    opts.max_channels = 64;
    auto a = sys.spawn(connection_actor, std::shared_ptr<net::session_control>(sink), reg, opts,
                       std::move(channels), std::move(cursor));
    spawned.push_back(a);
    sched.run();
    return a;
  }

  void text(const caf::actor& conn, const std::string& msg) {
    caf::anon_send(conn, text_atom_v, msg);
    sched.run();
  }

  void publish(std::vector<std::string> channels, std::string event = "withdrawn") {
    net::http::publish_request req;
    req.channels = std::move(channels);
    req.event = std::move(event);
    req.data = R"({"x":1})";
    caf::anon_send(reg, publish_atom_v, std::make_shared<publish_ticket>(std::move(req), nullptr));
    sched.run();
  }

  // Parsed bodies live in the fixture: the check macros keep references.
  std::deque<json> parsed;
  json& body(std::size_t i) {
    parsed.push_back(json::parse(sink->bodies.at(i)));
    return parsed.back();
  }
};


} // namespace herald::test
