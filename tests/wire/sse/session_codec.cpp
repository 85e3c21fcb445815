// sse::session_codec: what an SSE stream writes, as the subscription table
// and the session ask for it (net/wire/session_codec.hpp).
#include "net/wire/sse/session_codec.hpp"

#include <catch2/catch.hpp>

#include "net/wire/publication.hpp"
#include "net/wire/sse/encoder.hpp"

#include <string>

using namespace herald::net;

TEST_CASE("sse: publications are the shared event block, and there is no frame header", "[sse]") {
  const sse::session_codec c{500, false};
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
  const sse::session_codec c{500, false};
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
  const sse::session_codec c{500, false};
  CHECK(c.close(1013, "slow").second == "event: herald.gap\ndata: {\"reason\":\"slow_client\"}\n\n");
  CHECK(c.close(4002, "token expired").second ==
        "event: herald.token_expired\ndata: {\"reason\":\"token_expired\"}\n\n");
  auto shutdown = c.close(1012, "service restart").second;
  CHECK(shutdown.rfind("retry: 500\n", 0) == 0);
  CHECK(shutdown.find("event: herald.shutdown") != std::string::npos);
  CHECK(c.close(1008, "policy").second.empty()); // the stream just ends
  CHECK(c.close(1001, "going away").second.empty());
}

namespace {

/// A publication as the channel actor builds it (actors/publication.cpp):
/// its shared SSE block made once.
void fill(publication& p, std::string channel, std::string event, std::string data) {
  p.sse = make_frame(sse::encode_event(event, data));
  p.channel = std::move(channel);
  p.event = std::move(event);
  p.data = std::move(data);
  p.offset = 7;
}

} // namespace

TEST_CASE("sse::session_codec writes a publication's data alone by default", "[sse][codec]") {
  publication p;
  fill(p, "stream:1001", "withdrawn", R"({"amount":"1.0000000"})");
  const sse::session_codec plain(500, false);
  CHECK_FALSE(plain.envelope());
  auto bytes = plain.publication_message(p);
  CHECK(bytes.header.empty());
  CHECK(bytes.body == p.sse); // the shared block, not a copy
  CHECK(*bytes.body == "event: withdrawn\ndata: {\"amount\":\"1.0000000\"}\n\n");
}

TEST_CASE("sse::session_codec with the envelope names each publication's channel", "[sse][codec]") {
  publication on_stream;
  publication on_user;
  fill(on_stream, "stream:1001", "withdrawn", R"({"amount":"1.0000000"})");
  fill(on_user, "user:GA7Q", "withdrawn", R"({"amount":"1.0000000"})");
  const sse::session_codec enveloped(500, true);
  CHECK(enveloped.envelope());
  auto a = enveloped.publication_message(on_stream);
  auto b = enveloped.publication_message(on_user);
  CHECK(a.header.empty());
  CHECK(*a.body == "event: withdrawn\ndata: "
                   "{\"channel\":\"stream:1001\",\"data\":{\"amount\":\"1.0000000\"}}\n\n");
  CHECK(*b.body == "event: withdrawn\ndata: "
                   "{\"channel\":\"user:GA7Q\",\"data\":{\"amount\":\"1.0000000\"}}\n\n");

  SECTION("built once per publication and shared by every enveloped subscriber") {
    const sse::session_codec other(500, true);
    CHECK(other.publication_message(on_stream).body == a.body);
    CHECK(enveloped.publication_message(on_stream).body == a.body);
  }
  SECTION("a plain subscriber of the same publication still gets the plain block") {
    const sse::session_codec plain(500, false);
    CHECK(plain.publication_message(on_stream).body == on_stream.sse);
  }
  SECTION("Herald's own events are the same with or without the envelope") {
    const sse::session_codec plain(500, false);
    CHECK(enveloped.gap("stream:1001", "history_expired") ==
          plain.gap("stream:1001", "history_expired"));
    CHECK(enveloped.cursor_event({}) == plain.cursor_event({}));
    CHECK(enveloped.close(1012, "").second == plain.close(1012, "").second);
  }
}
