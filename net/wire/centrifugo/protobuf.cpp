#include "net/wire/centrifugo/protobuf.hpp"

#include "net/wire/centrifugo/codec.hpp"
#include "net/wire/ws/frame_codec.hpp"

#include "net/wire/centrifugo/client.pb.h" // generated from client.proto (build tree)
#include "net/wire/tags_filter.hpp"

#include <nlohmann/json.hpp>

#include <mutex>

namespace herald::net::centrifugo::protobuf {

namespace pb = ::herald::centrifugo::pb; // client.proto's package

namespace {

// Reads a base-128 varint of at most 5 bytes (a length: under 2^32) at
// `in[pos]`; false when truncated or longer.
bool read_length(std::string_view in, std::size_t& pos, std::uint64_t& out) {
  out = 0;
  for (int i = 0; i < 5; ++i) {
    if (pos >= in.size())
      return false;
    auto b = static_cast<std::uint8_t>(in[pos++]);
    out |= std::uint64_t{b & 0x7fu} << (7 * i);
    if ((b & 0x80u) == 0)
      return true;
  }
  return false;
}

void append_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

parsed refuse(std::uint32_t id, std::string message) {
  parsed p;
  p.err = {id, error_code::bad_request, std::move(message)};
  return p;
}

// A FilterNode as the JSON tree tags_filter::parse reads. The message was
// parsed already (libprotobuf bounds its nesting); the walk here stops at
// tags_filter's own depth and node limits, so a large tree is not copied.
bool filter_json(const pb::FilterNode& n, std::size_t depth, std::size_t& count,
                 nlohmann::json& out, std::string& error) {
  if (depth > tags_filter::max_depth) {
    error = "the filter nests deeper than " + std::to_string(tags_filter::max_depth) + " levels";
    return false;
  }
  if (++count > tags_filter::max_nodes) {
    error = "the filter has more than " + std::to_string(tags_filter::max_nodes) + " nodes";
    return false;
  }
  out = nlohmann::json::object();
  // proto3: an empty string is an absent field, as tags_filter reads it.
  if (!n.op().empty())
    out["op"] = n.op();
  if (!n.key().empty())
    out["key"] = n.key();
  if (!n.cmp().empty())
    out["cmp"] = n.cmp();
  if (!n.val().empty())
    out["val"] = n.val();
  if (n.vals_size() > 0) {
    if (static_cast<std::size_t>(n.vals_size()) > tags_filter::max_vals) {
      error = "the filter has more than " + std::to_string(tags_filter::max_vals) + " vals";
      return false;
    }
    auto& vals = out["vals"] = nlohmann::json::array();
    for (const auto& v : n.vals())
      vals.push_back(v);
  }
  if (n.nodes_size() > 0) {
    auto& kids = out["nodes"] = nlohmann::json::array();
    for (const auto& c : n.nodes()) {
      kids.push_back(nullptr);
      if (!filter_json(c, depth + 1, count, kids.back(), error))
        return false;
    }
  }
  return true;
}

parsed decode(const char* data, std::size_t size) {
  pb::Command c;
  if (!c.ParseFromArray(data, static_cast<int>(size)))
    return refuse(0, "a command is not a Protobuf Command");
  const std::uint32_t id = c.id();
  int methods = c.has_connect() + c.has_subscribe() + c.has_unsubscribe() + c.has_publish() +
                c.has_presence() + c.has_presence_stats() + c.has_history() + c.has_ping() +
                c.has_send() + c.has_rpc() + c.has_refresh() + c.has_sub_refresh();
  parsed out;
  auto& cmd = out.cmd;
  cmd.id = id;
  if (methods == 0) {
    if (id != 0)
      return refuse(id, "the command names no method");
    out.ok = true; // an empty Command: the client's pong
    cmd.kind = method::pong;
    return out;
  }
  if (id == 0)
    return refuse(0, "a command needs an id from 1 to 2^32-1");
  if (methods > 1)
    return refuse(id, "a command names one method");
  if (c.has_connect()) {
    cmd.kind = method::connect;
    cmd.token = c.connect().token();
  } else if (c.has_refresh()) {
    cmd.kind = method::refresh;
    cmd.token = c.refresh().token();
  } else if (c.has_subscribe()) {
    const auto& s = c.subscribe();
    cmd.kind = method::subscribe;
    cmd.channel = s.channel();
    cmd.recover = s.recover();
    cmd.since.epoch = s.epoch();
    cmd.since.offset = s.offset();
    if (cmd.since.offset > max_client_offset)
      return refuse(id, "\"offset\" must be an integer from 0 to 2^53-1");
    if (s.flag() < 0 || s.flag() > 0x7fffffff)
      return refuse(id, "\"flag\" must be a non-negative integer");
    cmd.flag = static_cast<std::uint32_t>(s.flag());
    if (cmd.since.epoch.size() > 64)
      return refuse(id, "\"epoch\" longer than 64 characters");
    if (!s.delta().empty() && s.delta() != "fossil")
      return refuse(id, "\"delta\" must be \"fossil\", the only delta format");
    cmd.delta = !s.delta().empty();
    if (s.has_tf()) {
      nlohmann::json tree;
      std::size_t count = 0;
      std::string why;
      if (filter_json(s.tf(), 1, count, tree, why))
        cmd.filter = tags_filter::parse(tree, why);
      if (!cmd.filter)
        return refuse(id, "invalid tags filter \"tf\": " + why);
      if (cmd.delta)
        return refuse(id, "a tags filter (\"tf\") cannot be combined with \"delta\" on one "
                          "subscription");
    }
  } else if (c.has_unsubscribe()) {
    cmd.kind = method::unsubscribe;
    cmd.channel = c.unsubscribe().channel();
  } else if (c.has_ping()) {
    cmd.kind = method::ping;
  } else {
    cmd.kind = method::unsupported;
    cmd.unsupported = c.has_publish()          ? "publish"
                      : c.has_presence()       ? "presence"
                      : c.has_presence_stats() ? "presence_stats"
                      : c.has_history()        ? "history"
                      : c.has_send()           ? "send"
                      : c.has_rpc()            ? "rpc"
                                               : "sub_refresh";
  }
  out.ok = true;
  return out;
}

std::string encode(const pb::Reply& r) {
  return delimited(r.SerializeAsString());
}

void fill(pb::Publication& out, const publication& p, bool as_delta = false) {
  out.set_data(as_delta ? p.delta : p.data);
  out.set_offset(p.offset);
  auto& tags = *out.mutable_tags();
  tags["event"] = p.event;
  for (const auto& [k, v] : p.tags)
    tags[k] = v;
  if (as_delta)
    out.set_delta(true);
}

void build_push_into(const publication& p, bool as_delta, frame& body, std::string& header) {
  pb::Reply r;
  auto* push = r.mutable_push();
  push->set_channel(p.channel);
  fill(*push->mutable_pub(), p, as_delta);
  auto out = encode(r);
  char h[ws::max_server_header_bytes];
  header.assign(h, ws::encode_header(ws::opcode::binary, out.size(), h));
  body = make_frame(std::move(out));
}

void build_push(const publication& p) {
  build_push_into(p, false, p.centrifugo_pb, p.centrifugo_pb_header);
}

class codec_impl final : public codec {
public:
  bool binary() const noexcept override { return true; }

  std::vector<std::size_t> command_ends(std::string_view message) const override {
    return protobuf::command_ends(message);
  }

  std::vector<parsed> parse_commands(std::string_view message) const override {
    return protobuf::parse_commands(message);
  }

  std::string encode_error(std::uint32_t id, error_code code, std::string_view message,
                           bool temporary) const override {
    pb::Reply r;
    r.set_id(id);
    auto* e = r.mutable_error();
    e->set_code(static_cast<std::uint32_t>(code));
    auto text = message.empty() ? message_of(code) : message;
    e->set_message(text.data(), text.size());
    e->set_temporary(temporary);
    return encode(r);
  }

  std::string encode_connect(std::uint32_t id, std::string_view client, std::string_view version,
                             std::uint32_t ping_seconds,
                             std::uint32_t ttl_seconds) const override {
    pb::Reply r;
    r.set_id(id);
    auto* c = r.mutable_connect();
    c->set_client(client.data(), client.size());
    c->set_version(version.data(), version.size());
    if (ping_seconds > 0) {
      c->set_ping(ping_seconds);
      c->set_pong(true);
    }
    if (ttl_seconds > 0) {
      c->set_expires(true);
      c->set_ttl(ttl_seconds);
    }
    return encode(r);
  }

  std::string encode_refresh(std::uint32_t id, std::string_view client, std::string_view version,
                             std::uint32_t ttl_seconds) const override {
    pb::Reply r;
    r.set_id(id);
    auto* c = r.mutable_refresh();
    c->set_client(client.data(), client.size());
    c->set_version(version.data(), version.size());
    if (ttl_seconds > 0) {
      c->set_expires(true);
      c->set_ttl(ttl_seconds);
    }
    return encode(r);
  }

  std::string encode_subscribe(std::uint32_t id, const stream_position& position,
                               bool was_recovering, bool recovered,
                               const std::vector<const publication*>& replay,
                               bool delta) const override {
    pb::Reply r;
    r.set_id(id);
    auto* s = r.mutable_subscribe();
    s->set_recoverable(true);
    s->set_positioned(true);
    s->set_epoch(position.epoch);
    s->set_offset(position.offset);
    s->set_was_recovering(was_recovering);
    s->set_recovered(recovered);
    if (delta)
      s->set_delta(true);
    const publication* prev = nullptr;
    for (const auto* p : replay) {
      fill(*s->add_publications(), *p, delta && prev && delta_follows(*prev, *p));
      prev = p;
    }
    return encode(r);
  }

  std::string encode_unsubscribe(std::uint32_t id) const override {
    pb::Reply r;
    r.set_id(id);
    r.mutable_unsubscribe();
    return encode(r);
  }

  std::string encode_ping(std::uint32_t id) const override {
    pb::Reply r;
    r.set_id(id);
    r.mutable_ping();
    return encode(r);
  }

  std::string encode_unsubscribe_push(std::string_view channel, std::uint32_t code,
                                      std::string_view reason) const override {
    pb::Reply r;
    auto* push = r.mutable_push();
    push->set_channel(channel.data(), channel.size());
    auto* u = push->mutable_unsubscribe();
    u->set_code(code);
    u->set_reason(reason.data(), reason.size());
    return encode(r);
  }

  const frame& ping_frame() const override {
    // An empty Reply, delimited: its length 0.
    static const frame ping = make_frame(ws::encode_frame(ws::opcode::binary, std::string(1, '\0')));
    return ping;
  }

  publication_bytes publication_push(const publication& p) const override {
    std::call_once(p.centrifugo_pb_once, build_push, std::cref(p));
    return {p.centrifugo_pb_header, p.centrifugo_pb};
  }

  publication_bytes delta_push(const publication& p, bool as_delta) const override {
    if (!as_delta)
      return publication_push(p); // full data travels as bytes either way
    std::call_once(p.centrifugo_pb_delta_once, [&] {
      build_push_into(p, true, p.centrifugo_pb_delta, p.centrifugo_pb_delta_header);
    });
    return {p.centrifugo_pb_delta_header, p.centrifugo_pb_delta};
  }
};

} // namespace

std::vector<parsed> parse_commands(std::string_view message) {
  std::vector<parsed> out;
  std::size_t pos = 0;
  while (pos < message.size()) {
    std::uint64_t len = 0;
    if (!read_length(message, pos, len)) {
      out.push_back(refuse(0, "a command's length prefix is not a varint"));
      break;
    }
    if (len > message.size() - pos) {
      out.push_back(refuse(0, "a command's length runs past the end of the message"));
      break;
    }
    out.push_back(decode(message.data() + pos, static_cast<std::size_t>(len)));
    pos += static_cast<std::size_t>(len);
    if (!out.back().ok && out.back().err.id == 0)
      break;
  }
  return out;
}

std::vector<std::size_t> command_ends(std::string_view message) {
  std::vector<std::size_t> ends;
  std::size_t pos = 0;
  while (pos < message.size()) {
    std::uint64_t len = 0;
    if (!read_length(message, pos, len) || len > message.size() - pos) {
      ends.push_back(message.size());
      break;
    }
    pos += static_cast<std::size_t>(len);
    ends.push_back(pos);
  }
  return ends;
}

std::string delimited(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() + 5);
  append_varint(out, bytes.size());
  out.append(bytes);
  return out;
}

} // namespace herald::net::centrifugo::protobuf

namespace herald::net::centrifugo {

const codec& protobuf_codec() noexcept {
  static const protobuf::codec_impl c;
  return c;
}

} // namespace herald::net::centrifugo
