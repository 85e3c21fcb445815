// The subscriber's Centrifugo Protobuf side (transport::centrifugo_protobuf):
// the connect and subscribe Commands it sends, and the Replies it reads
// (net/wire/centrifugo/client.proto, the classes protoc generates from it).
// A publication push goes straight to on_publication(); anything else is
// turned into its JSON form and handled as the JSON transport handles it.
#include "loadtest/subscriber.hpp"

#include "net/wire/centrifugo/client.pb.h"
#include "net/wire/centrifugo/protobuf.hpp"

namespace herald::loadtest {

namespace pb = ::herald::centrifugo::pb;
namespace cfpb = net::centrifugo::protobuf;

namespace {

// The next delimited record of `in` at `pos`; false at the end or when broken.
bool next_record(std::string_view in, std::size_t& pos, std::string_view& out) {
  std::uint64_t len = 0;
  for (int shift = 0;; shift += 7) {
    if (pos >= in.size() || shift > 28)
      return false;
    auto b = static_cast<std::uint8_t>(in[pos++]);
    len |= std::uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80u) == 0)
      break;
  }
  if (len > in.size() - pos)
    return false;
  out = in.substr(pos, static_cast<std::size_t>(len));
  pos += static_cast<std::size_t>(len);
  return true;
}

} // namespace

std::string subscriber::centrifugo_protobuf_commands() const {
  std::string out;
  pb::Command connect;
  connect.set_id(1);
  connect.mutable_connect();
  out += cfpb::delimited(connect.SerializeAsString());
  for (std::size_t i = 0; i < tracks_.size(); ++i) {
    const auto& t = tracks_[i];
    pb::Command c;
    c.set_id(static_cast<std::uint32_t>(i + 2));
    auto* s = c.mutable_subscribe();
    s->set_channel(channel_name(t));
    if (t.asks_recovery(resume_)) {
      s->set_recover(true);
      s->set_epoch(t.epoch);
      s->set_offset(t.last_offset);
    }
    out += cfpb::delimited(c.SerializeAsString());
  }
  return out;
}

void subscriber::on_protobuf_message(std::string_view payload, std::int64_t now) {
  std::size_t pos = 0;
  std::string_view record;
  while (pos < payload.size()) {
    if (!next_record(payload, pos, record)) {
      ++ctx_.counters.unparsed;
      return;
    }
    pb::Reply r;
    if (!r.ParseFromArray(record.data(), static_cast<int>(record.size()))) {
      ++ctx_.counters.unparsed;
      return;
    }
    if (r.id() == 0 && !r.has_push()) {
      // The server's ping: answer with an empty Command (the connect reply says pong).
      send_frame(ws::opcode::binary, std::string_view{"\0", 1});
      continue;
    }
    if (r.has_push() && r.push().has_pub()) {
      const auto& push = r.push();
      track* t = find_track(push.channel());
      pub_fields f;
      if (t == nullptr || !scan_pub_fields(push.pub().data(), f)) {
        ++ctx_.counters.unparsed;
        continue;
      }
      on_publication(*t, true, push.pub().offset(), f, now);
      continue;
    }
    // Everything else, as its JSON form.
    nlohmann::json j = nlohmann::json::object();
    if (r.id() != 0)
      j["id"] = r.id();
    if (r.has_error())
      j["error"] = {{"code", r.error().code()}, {"message", r.error().message()}};
    if (r.has_push()) {
      j["push"] = {{"channel", r.push().channel()}};
      if (r.push().has_unsubscribe())
        j["push"]["unsubscribe"] = {{"code", r.push().unsubscribe().code()}};
    }
    if (r.has_subscribe()) {
      const auto& s = r.subscribe();
      nlohmann::json sj{{"recovered", s.recovered()}, {"epoch", s.epoch()}, {"offset", s.offset()}};
      auto pubs = nlohmann::json::array();
      for (const auto& p : s.publications()) {
        auto data = nlohmann::json::parse(p.data(), nullptr, false);
        pubs.push_back({{"data", std::move(data)}, {"offset", p.offset()}});
      }
      if (!pubs.empty())
        sj["publications"] = std::move(pubs);
      j["subscribe"] = std::move(sj);
    }
    if (r.has_connect())
      j["connect"] = nlohmann::json::object();
    on_centrifugo_reply(j, now);
  }
}

} // namespace herald::loadtest
