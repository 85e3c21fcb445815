// Centrifugo's client protocol in its Protobuf encoding (net/wire/centrifugo/
// protobuf.hpp): delimited commands in, delimited replies and pushes out.
// The bytes here are written and read by hand with the field numbers of
// centrifugal/protocol definitions/client.proto, not with our generated
// classes, so a wrong number in client.proto fails these tests; the real
// SDK's Protobuf build is tested against the server in tests/e2e.
#include "net/wire/centrifugo/codec.hpp"
#include "net/wire/centrifugo/protobuf.hpp"

#include "../support.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace herald::net;
using namespace herald::net::centrifugo;
using herald::test::check_recovering_subscribe;
using herald::test::make_pub;

namespace {

// -- writing (Protobuf wire format: tag = field << 3 | wire type) ------------

std::string varint(std::uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string field_varint(int field, std::uint64_t v) {
  return varint(static_cast<std::uint64_t>(field) << 3) + varint(v);
}
std::string field_bytes(int field, const std::string& bytes) {
  return varint((static_cast<std::uint64_t>(field) << 3) | 2) + varint(bytes.size()) + bytes;
}
std::string delimit(const std::string& msg) { return varint(msg.size()) + msg; }

// -- reading: one message's fields, by number ---------------------------------

struct fields {
  std::multimap<int, std::uint64_t> ints;
  std::multimap<int, std::string> bytes;
  std::uint64_t u(int f) const {
    auto it = ints.find(f);
    return it == ints.end() ? 0 : it->second;
  }
  std::string b(int f) const {
    auto it = bytes.find(f);
    return it == bytes.end() ? std::string{} : it->second;
  }
  bool has(int f) const { return ints.count(f) + bytes.count(f) > 0; }
};

std::uint64_t read_varint(const std::string& in, std::size_t& pos) {
  std::uint64_t v = 0;
  for (int shift = 0; pos < in.size(); shift += 7) {
    auto b = static_cast<std::uint8_t>(in[pos++]);
    v |= std::uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80u) == 0)
      return v;
  }
  FAIL("truncated varint");
  return v;
}

fields read(const std::string& msg) {
  fields out;
  std::size_t pos = 0;
  while (pos < msg.size()) {
    auto tag = read_varint(msg, pos);
    int field = static_cast<int>(tag >> 3);
    switch (tag & 7) {
    case 0:
      out.ints.emplace(field, read_varint(msg, pos));
      break;
    case 2: {
      auto n = read_varint(msg, pos);
      REQUIRE(pos + n <= msg.size());
      out.bytes.emplace(field, msg.substr(pos, n));
      pos += n;
      break;
    }
    default:
      FAIL("unexpected wire type " << (tag & 7));
    }
  }
  return out;
}

// One delimited record: its body, checking the prefix covers it exactly.
std::string undelimit(const std::string& record) {
  std::size_t pos = 0;
  auto n = read_varint(record, pos);
  REQUIRE(pos + n == record.size());
  return record.substr(pos);
}

// Command field numbers (client.proto).
constexpr int cmd_id = 1, cmd_connect = 4, cmd_subscribe = 5, cmd_unsubscribe = 6,
              cmd_publish = 7, cmd_history = 10, cmd_ping = 11, cmd_rpc = 13, cmd_refresh = 14;

} // namespace

TEST_CASE("protobuf: several delimited commands in one message, each with its id", "[protobuf]") {
  std::string message =
    delimit(field_varint(cmd_id, 1) + field_bytes(cmd_connect, field_bytes(1, "tok"))) +
    delimit(field_varint(cmd_id, 2) +
            field_bytes(cmd_subscribe, field_bytes(1, "stream:1") + field_varint(3, 1) +
                                         field_bytes(6, "e1") + field_varint(7, 7) +
                                         field_varint(14, 2))) +
    delimit("") + // an empty Command: the client's pong
    delimit(field_varint(cmd_id, 3) + field_bytes(cmd_unsubscribe, field_bytes(1, "stream:1"))) +
    delimit(field_varint(cmd_id, 4) + field_bytes(cmd_ping, "")) +
    delimit(field_varint(cmd_id, 5) + field_bytes(cmd_refresh, field_bytes(1, "t2")));
  auto cmds = protobuf::parse_commands(message);
  REQUIRE(cmds.size() == 6u);
  for (const auto& c : cmds)
    REQUIRE(c.ok);
  CHECK(cmds[0].cmd.kind == method::connect);
  CHECK(cmds[0].cmd.id == 1u);
  CHECK(cmds[0].cmd.token == "tok");
  check_recovering_subscribe(cmds[1].cmd);
  CHECK(cmds[2].cmd.kind == method::pong);
  CHECK(cmds[2].cmd.id == 0u);
  CHECK(cmds[3].cmd.kind == method::unsubscribe);
  CHECK(cmds[3].cmd.channel == "stream:1");
  CHECK(cmds[4].cmd.kind == method::ping);
  CHECK(cmds[5].cmd.kind == method::refresh);
  CHECK(cmds[5].cmd.token == "t2");

  // The rate limit counts the same commands, before parsing.
  auto ends = protobuf::command_ends(message);
  REQUIRE(ends.size() == 6u);
  CHECK(ends.back() == message.size());
  CHECK(protobuf_codec().command_ends(message) == ends);
  CHECK(protobuf::parse_commands("").empty());
  CHECK(protobuf::command_ends("").empty());
}

TEST_CASE("protobuf: unknown fields are skipped, methods Herald does not offer are named",
          "[protobuf]") {
  // Field 99 (varint) and 98 (bytes) are not in the schema; field 2 and 3 are
  // reserved in Command.
  auto cmds = protobuf::parse_commands(
    delimit(field_varint(99, 5) + field_varint(cmd_id, 7) + field_bytes(98, "x") +
            field_bytes(cmd_subscribe, field_bytes(1, "stream:9") + field_varint(77, 1))) +
    delimit(field_varint(cmd_id, 8) + field_bytes(cmd_rpc, field_bytes(2, "m"))) +
    delimit(field_varint(cmd_id, 9) + field_bytes(cmd_publish, "")) +
    delimit(field_varint(cmd_id, 10) + field_bytes(cmd_history, field_bytes(1, "stream:1"))));
  REQUIRE(cmds.size() == 4u);
  REQUIRE(cmds[0].ok);
  CHECK(cmds[0].cmd.kind == method::subscribe);
  CHECK(cmds[0].cmd.channel == "stream:9");
  for (std::size_t i = 1; i < 4; ++i)
    REQUIRE(cmds[i].ok);
  CHECK(cmds[1].cmd.kind == method::unsupported);
  CHECK(cmds[1].cmd.unsupported == "rpc");
  CHECK(cmds[2].cmd.unsupported == "publish");
  CHECK(cmds[3].cmd.unsupported == "history");
  CHECK(cmds[3].cmd.id == 10u);
}

TEST_CASE("protobuf: bad framing or wire data ends the message with id 0 (3501)", "[protobuf]") {
  const std::string good = delimit(field_varint(cmd_id, 1) + field_bytes(cmd_ping, ""));
  struct bad {
    const char* what;
    std::string bytes;
  };
  const std::vector<bad> cases = {
    {"truncated length varint", std::string("\x80", 1)},
    {"length varint of six bytes", std::string("\x80\x80\x80\x80\x80\x01", 6)},
    {"length past the end", std::string("\x05\x08\x01", 3)},
    {"truncated field varint inside", delimit(std::string("\x08\x80", 2))},
    {"bytes field longer than the command", delimit(std::string("\x22\x09\x0a", 3))},
    {"wire type 7", delimit(std::string("\x0f\x01", 2))},
    {"end-group without a start", delimit(std::string("\x0c", 1))},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    auto cmds = protobuf::parse_commands(good + c.bytes + good);
    REQUIRE(cmds.size() == 2u); // the good one, then the refusal; nothing after it
    CHECK(cmds[0].ok);
    CHECK_FALSE(cmds[1].ok);
    CHECK(cmds[1].err.id == 0u);
    CHECK(cmds[1].err.code == error_code::bad_request);
    CHECK_FALSE(cmds[1].err.message.empty());
    // The rate limit counts the rest of the message as one command.
    auto ends = protobuf::command_ends(good + c.bytes + good);
    CHECK(ends.back() == good.size() * 2 + c.bytes.size());
  }
  // Deep nesting of unknown groups is refused, not recursed into without end.
  std::string deep;
  for (int i = 0; i < 10'000; ++i)
    deep += "\xfb\x06"; // start-group, field 111
  auto cmds = protobuf::parse_commands(delimit(deep));
  REQUIRE(cmds.size() == 1u);
  CHECK_FALSE(cmds[0].ok);
}

TEST_CASE("protobuf: readable commands with bad values are refused with their id (107)",
          "[protobuf]") {
  auto sub = [](std::uint32_t id, const std::string& body) {
    return delimit(field_varint(cmd_id, id) + field_bytes(cmd_subscribe, body));
  };
  auto cmds = protobuf::parse_commands(
    sub(1, field_bytes(1, "stream:1") + field_varint(7, 9007199254740992ULL)) +
    sub(2, field_bytes(1, "stream:1") + field_varint(14, static_cast<std::uint64_t>(-1))) +
    sub(3, field_bytes(1, "stream:1") + field_bytes(6, std::string(65, 'e'))) +
    delimit(field_varint(cmd_id, 4) + field_bytes(cmd_ping, "") + field_bytes(cmd_connect, "")) +
    delimit(field_varint(cmd_id, 5)) + // an id and no method
    delimit(field_bytes(cmd_connect, ""))); // a method without an id: no reply can carry it
  REQUIRE(cmds.size() == 6u);
  for (std::uint32_t i = 0; i < 5; ++i) {
    INFO(i);
    CHECK_FALSE(cmds[i].ok);
    CHECK(cmds[i].err.id == i + 1);
    CHECK(cmds[i].err.code == error_code::bad_request);
  }
  CHECK_FALSE(cmds[5].ok);
  CHECK(cmds[5].err.id == 0u);
}

TEST_CASE("protobuf: replies are one delimited Reply with Centrifugo's field numbers",
          "[protobuf]") {
  const auto& c = protobuf_codec();
  CHECK(c.binary());
  CHECK_FALSE(json_codec().binary());

  auto connect = read(undelimit(c.encode_connect(3, "cid", "1.2", 25, 60)));
  CHECK(connect.u(1) == 3u);
  auto result = read(connect.b(5));
  CHECK(result.b(1) == "cid");
  CHECK(result.b(2) == "1.2");
  CHECK(result.u(3) == 1u); // expires
  CHECK(result.u(4) == 60u);
  CHECK(result.u(7) == 25u); // ping
  CHECK(result.u(8) == 1u);  // pong
  auto forever = read(read(undelimit(c.encode_refresh(4, "cid", "1.2", 0))).b(14));
  CHECK_FALSE(forever.has(3));
  CHECK_FALSE(forever.has(4));

  auto err = read(undelimit(c.encode_error(5, error_code::internal, "try later", true)));
  CHECK(err.u(1) == 5u);
  auto e = read(err.b(2));
  CHECK(e.u(1) == 100u);
  CHECK(e.b(2) == "try later");
  CHECK(e.u(3) == 1u);
  CHECK(read(read(undelimit(c.encode_error(6, error_code::permission_denied))).b(2)).b(2) ==
        "permission denied");

  auto unsub = read(undelimit(c.encode_unsubscribe(7)));
  CHECK(unsub.u(1) == 7u);
  CHECK(unsub.has(7));
  CHECK(read(undelimit(c.encode_ping(8))).has(12));

  auto gap = read(undelimit(c.encode_unsubscribe_push("stream:1", 2500, "epoch_changed")));
  CHECK_FALSE(gap.has(1)); // a push has no id
  auto push = read(gap.b(4));
  CHECK(push.b(2) == "stream:1");
  auto u = read(push.b(7));
  CHECK(u.u(2) == 2500u);
  CHECK(u.b(3) == "epoch_changed");
}

TEST_CASE("protobuf: the subscribe reply carries the position and the replay in order",
          "[protobuf]") {
  auto p4 = make_pub(4);
  auto p5 = make_pub(5);
  auto r = read(undelimit(protobuf_codec().encode_subscribe(9, {"abc", 5}, true, true,
                                                            {p4.get(), p5.get()})));
  CHECK(r.u(1) == 9u);
  auto s = read(r.b(6));
  CHECK(s.u(3) == 1u); // recoverable
  CHECK(s.b(6) == "abc");
  CHECK(s.u(9) == 5u);
  CHECK(s.u(10) == 1u); // positioned
  CHECK(s.u(8) == 1u);  // recovered
  CHECK(s.u(12) == 1u); // was_recovering
  std::vector<fields> pubs;
  for (auto [it, end] = s.bytes.equal_range(7); it != end; ++it)
    pubs.push_back(read(it->second));
  REQUIRE(pubs.size() == 2u);
  CHECK(pubs[0].u(6) == 4u);
  CHECK(pubs[1].u(6) == 5u);
  CHECK(pubs[0].b(4) == R"({"amount":"12.5"})"); // the JSON data, unchanged
  auto tag = read(pubs[0].b(7));                  // map entry: key 1, value 2
  CHECK(tag.b(1) == "event");
  CHECK(tag.b(2) == "withdrawn");
}

TEST_CASE("protobuf: a publication push is encoded once, in a binary frame, beside JSON's",
          "[protobuf]") {
  auto p = make_pub(12);
  const auto& c = protobuf_codec();
  const auto& first = c.publication_push(*p).body;
  CHECK(&c.publication_push(*p).body == &first);
  CHECK(first.get() == c.publication_push(*p).body.get());
  auto reply = read(undelimit(*first));
  CHECK_FALSE(reply.has(1));
  auto push = read(reply.b(4));
  CHECK(push.b(2) == "stream:42");
  auto pub = read(push.b(4));
  CHECK(pub.u(6) == 12u);
  CHECK(pub.b(4) == p->data);
  const auto& header = c.publication_push(*p).header;
  REQUIRE(header.size() == 2u);
  CHECK(static_cast<std::uint8_t>(header[0]) == 0x82); // FIN + binary
  CHECK(static_cast<std::size_t>(header[1]) == first->size());
  // The JSON push of the same publication is its own text frame.
  const auto& json_header = json_codec().publication_push(*p).header;
  CHECK(static_cast<std::uint8_t>(json_header[0]) == 0x81);
  CHECK(json_codec().publication_push(*p).body->front() == '{');
}

TEST_CASE("protobuf: delta: \"fossil\" is read, another format refused 107, a delta push "
          "is Publication.delta = 8 with the delta bytes",
          "[protobuf][delta]") {
  auto sub = [](std::uint32_t id, const std::string& body) {
    return delimit(field_varint(cmd_id, id) + field_bytes(cmd_subscribe, body));
  };
  auto cmds = protobuf::parse_commands(sub(1, field_bytes(1, "stream:1") + field_bytes(12, "fossil")) +
                                       sub(2, field_bytes(1, "stream:1") + field_bytes(12, "zstd")) +
                                       sub(3, field_bytes(1, "stream:1")));
  REQUIRE(cmds.size() == 3u);
  REQUIRE(cmds[0].ok);
  CHECK(cmds[0].cmd.delta);
  CHECK_FALSE(cmds[1].ok);
  CHECK(cmds[1].err.id == 2u);
  CHECK(cmds[1].err.code == error_code::bad_request);
  REQUIRE(cmds[2].ok);
  CHECK_FALSE(cmds[2].cmd.delta);

  const auto& c = protobuf_codec();
  auto p4 = make_pub(4);
  auto p5 = make_pub(5);
  p5->delta = "Kx\n3@0,delta;"; // stands for the channel's delta
  // The subscribe reply says delta (SubscribeResult.delta = 13); the replay's
  // first publication is full, the next one (offset + 1, same epoch) a delta.
  auto s = read(read(undelimit(c.encode_subscribe(9, {"abc", 5}, true, true, {p4.get(), p5.get()},
                                                  true)))
                  .b(6));
  CHECK(s.u(13) == 1u);
  std::vector<fields> pubs;
  for (auto [it, end] = s.bytes.equal_range(7); it != end; ++it)
    pubs.push_back(read(it->second));
  REQUIRE(pubs.size() == 2u);
  CHECK(pubs[0].b(4) == p4->data);
  CHECK_FALSE(pubs[0].has(8));
  CHECK(pubs[1].b(4) == p5->delta);
  CHECK(pubs[1].u(8) == 1u);
  // Without delta negotiated: no flag, full data.
  auto plain = read(read(undelimit(c.encode_subscribe(9, {"abc", 5}, true, true,
                                                      {p4.get(), p5.get()})))
                      .b(6));
  CHECK_FALSE(plain.has(13));

  // Live pushes: the delta push once per publication, the full one is the plain push.
  const auto& d = c.delta_push(*p5, true);
  CHECK(d.body.get() == c.delta_push(*p5, true).body.get());
  auto pub = read(read(read(undelimit(*d.body)).b(4)).b(4));
  CHECK(pub.b(4) == p5->delta);
  CHECK(pub.u(8) == 1u);
  CHECK(pub.u(6) == 5u);
  CHECK(static_cast<std::uint8_t>(d.header[0]) == 0x82);
  CHECK(c.delta_push(*p5, false).body.get() == c.publication_push(*p5).body.get());
}

TEST_CASE("protobuf: the server ping is an empty Reply in a binary frame, JSON's is {}",
          "[protobuf]") {
  CHECK(*protobuf_codec().ping_frame() == std::string("\x82\x01\x00", 3));
  CHECK(*json_codec().ping_frame() == std::string("\x81\x02{}", 4));
  CHECK(codec_for(herald::net::ws::dialect::herald) == nullptr);
  CHECK(codec_for(herald::net::ws::dialect::centrifugo) == &json_codec());
  CHECK(codec_for(herald::net::ws::dialect::centrifugo_protobuf) == &protobuf_codec());
}

TEST_CASE("protobuf: delimited() writes the length as a base-128 varint", "[protobuf]") {
  CHECK(protobuf::delimited("") == std::string(1, '\0'));
  CHECK(protobuf::delimited(std::string(127, 'a')).substr(0, 1) == "\x7f");
  CHECK(protobuf::delimited(std::string(128, 'a')).substr(0, 2) == "\x80\x01");
  CHECK(protobuf::delimited(std::string(300, 'a')).substr(0, 2) == "\xac\x02");
  CHECK(protobuf::delimited(std::string(300, 'a')).size() == 302u);
}

TEST_CASE("protobuf: SubscribeRequest.tf = 13 is the tags filter: bad trees and tf with delta "
          "are refused 107 and pushes carry Publication.tags = 7",
          "[protobuf][filter]") {
  auto sub = [](std::uint32_t id, const std::string& body) {
    return delimit(field_varint(cmd_id, id) + field_bytes(cmd_subscribe, body));
  };
  // FilterNode: op 1, key 2, cmp 3, val 4, vals 5, nodes 6.
  auto leaf = field_bytes(2, "asset") + field_bytes(3, "in") + field_bytes(5, "USDC") +
              field_bytes(5, "XLM");
  auto tree = field_bytes(1, "and") + field_bytes(6, leaf) +
              field_bytes(6, field_bytes(2, "event") + field_bytes(3, "eq") +
                               field_bytes(4, "withdrawn"));
  std::string deep = field_bytes(2, "a") + field_bytes(3, "ex");
  for (int i = 0; i < 9; ++i)
    deep = field_bytes(1, "not") + field_bytes(6, deep);
  auto cmds = protobuf::parse_commands(
    sub(1, field_bytes(1, "stream:1") + field_bytes(13, tree)) +
    sub(2, field_bytes(1, "stream:1") + field_bytes(13, field_bytes(2, "a") + field_bytes(3, "gt") +
                                                          field_bytes(4, "ten"))) +
    sub(3, field_bytes(1, "stream:1") + field_bytes(12, "fossil") + field_bytes(13, leaf)) +
    sub(4, field_bytes(1, "stream:1") + field_bytes(13, deep)) +
    sub(5, field_bytes(1, "stream:1") + field_bytes(13, "")));
  REQUIRE(cmds.size() == 5u);
  REQUIRE(cmds[0].ok);
  REQUIRE(cmds[0].cmd.filter);
  CHECK(cmds[0].cmd.filter->to_json() ==
        R"({"nodes":[{"cmp":"in","key":"asset","vals":["USDC","XLM"]},)"
        R"({"cmp":"eq","key":"event","val":"withdrawn"}],"op":"and"})");
  CHECK(cmds[0].cmd.filter->matches("withdrawn", {{"asset", "XLM"}}));
  CHECK_FALSE(cmds[0].cmd.filter->matches("withdrawn", {{"asset", "EURC"}}));
  for (std::size_t i : {1u, 2u, 3u, 4u}) {
    INFO(i);
    CHECK_FALSE(cmds[i].ok);
    CHECK(cmds[i].err.id == i + 1);
    CHECK(cmds[i].err.code == error_code::bad_request);
  }
  CHECK(cmds[1].err.message.find("decimal number") != std::string::npos);
  CHECK(cmds[2].err.message.find("cannot be combined with \"delta\"") != std::string::npos);
  CHECK(cmds[3].err.message.find("deeper than 8") != std::string::npos);
  CHECK(cmds[4].err.message.find("cmp must be one of") != std::string::npos); // an empty node

  // The push's Publication.tags (map<string,string> = 7): the event and the other tags.
  auto p = make_pub(3);
  p->tags = {{"asset", "USDC"}, {"memo", "caf\xc3\xa9"}};
  auto pub = read(read(read(undelimit(*protobuf_codec().publication_push(*p).body)).b(4)).b(4));
  std::map<std::string, std::string> tags;
  for (auto [it, end] = pub.bytes.equal_range(7); it != end; ++it) {
    auto entry = read(it->second);
    tags[entry.b(1)] = entry.b(2);
  }
  CHECK(tags == std::map<std::string, std::string>{
                  {"event", "withdrawn"}, {"asset", "USDC"}, {"memo", "caf\xc3\xa9"}});
}
