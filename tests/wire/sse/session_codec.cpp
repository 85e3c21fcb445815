// sse::session_codec: what an SSE stream writes, as the subscription table
// and the session ask for it (net/wire/session_codec.hpp).
#include "net/wire/sse/session_codec.hpp"

#include <catch2/catch.hpp>

using namespace herald::net;

TEST_CASE("sse: publications are the shared event block, and there is no frame header", "[sse]") {
  const sse::session_codec c{500};
  publication p;
  p.sse = make_frame("event: e\ndata: {}\n\n");
  auto bytes = c.publication_message(p);
  CHECK(&bytes.body == &p.sse);
  CHECK(bytes.header.empty());
  CHECK(c.carries_cursor());
  CHECK(c.cursor_event({}) == "event: herald.cursor\ndata: {}\n\n");
  // Overflow policy conflate: the event names the conflated channels.
  CHECK(c.cursor_event({"stream:1", "stream:b-2"}) ==
        "event: herald.cursor\ndata: {\"conflated\":[\"stream:1\",\"stream:b-2\"]}\n\n");
}

TEST_CASE("sse: a failed recovery is a gap, replies to commands are nothing", "[sse]") {
  const sse::session_codec c{500};
  CHECK(c.subscribed(nullptr, "stream:1", {"e", 4}, true, false, "history_trimmed", {}) ==
        "event: herald.gap\ndata: {\"channel\":\"stream:1\",\"reason\":\"history_trimmed\"}\n\n");
  CHECK(c.subscribed(nullptr, "stream:1", {"e", 4}, true, true, "", {}).empty());
  CHECK(c.subscribed(nullptr, "stream:1", {"e", 4}, false, false, "", {}).empty());
  CHECK(c.pending_error(nullptr, "stream:1", herald::errc::unavailable, "x").empty());
  CHECK(c.unsubscribed(nullptr, "stream:1").empty());
  CHECK(c.refresh_required(0).empty());
  CHECK_FALSE(c.gap_ends_subscription());
  CHECK_FALSE(c.replay_in_reply());
}

TEST_CASE("sse: the codec's close writes the last event that says why", "[sse]") {
  const sse::session_codec c{500};
  CHECK(c.close(1013, "slow").second == "event: herald.gap\ndata: {\"reason\":\"slow_client\"}\n\n");
  CHECK(c.close(4002, "token expired").second ==
        "event: herald.token_expired\ndata: {\"reason\":\"token_expired\"}\n\n");
  auto shutdown = c.close(1012, "service restart").second;
  CHECK(shutdown.rfind("retry: 500\n", 0) == 0);
  CHECK(shutdown.find("event: herald.shutdown") != std::string::npos);
  CHECK(c.close(1008, "policy").second.empty()); // the stream just ends
  CHECK(c.close(1001, "going away").second.empty());
}
