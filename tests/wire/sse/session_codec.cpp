#include "net/wire/sse/session_codec.hpp"

#include <catch2/catch.hpp>

#include "net/wire/publication.hpp"
#include "net/wire/sse/encoder.hpp"

#include <string>

using namespace herald::net;

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

TEST_CASE("sse::session_codec with the envelope names each publication's channel",
          "[sse][codec]") {
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
