// The subscriber's Centrifugo side in JSON (transport::centrifugo,
// /connection/websocket, docs/centrifugo.md): the connect and subscribe
// commands (with recover/epoch/offset when resuming), and the replies and
// pushes that are not publications: errors, the application ping,
// unsubscribe pushes and subscribe replies, whose recovered publications
// are checked like live ones. centrifugo_protobuf.cpp turns Protobuf replies
// into the same JSON and hands them to on_centrifugo_reply().
#include "loadtest/subscriber.hpp"

#include "net/wire/fossil_delta.hpp"

#include <nlohmann/json.hpp>

namespace herald::loadtest {

std::string subscriber::centrifugo_commands() const {
  std::string m = R"({"id":1,"connect":{"name":"herald-loadtest"}})";
  for (std::size_t i = 0; i < tracks_.size(); ++i) {
    const auto& t = tracks_[i];
    m += R"(
{"id":)";
    m += std::to_string(i + 2);
    m += R"(,"subscribe":{"channel":")";
    m += channel_name(t);
    m += '"';
    if (spec_.delta)
      m += R"(,"delta":"fossil")";
    if (spec_.filter)
      m += R"(,"tf":{"key":"event","cmp":"eq","val":"loadtest"})";
    if (t.asks_recovery(resume_)) {
      m += R"(,"recover":true,"epoch":")";
      m += t.epoch;
      m += R"(","offset":)";
      m += std::to_string(t.last_offset);
    }
    m += "}}";
  }
  return m;
}

void subscriber::on_centrifugo_control(std::string_view text, std::int64_t now) {
  if (text == "{}") {
    // The server's application ping: answer it (the connect reply says pong).
    send_frame(ws::opcode::text, "{}");
    return;
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) {
    ++ctx_.counters.unparsed;
    return;
  }
  on_centrifugo_reply(j, now);
}

void subscriber::on_centrifugo_reply(const nlohmann::json& j, std::int64_t now) {
  if (auto e = j.find("error"); e != j.end() && e->is_object()) {
    auto code = std::to_string(e->value("code", 0));
    ++ctx_.notices["centrifugo error " + code];
    if (state_ != state::established)
      deferred_ = "centrifugo: error " + code;
    return;
  }
  if (auto p = j.find("push"); p != j.end() && p->is_object()) {
    if (p->contains("unsubscribe")) {
      // A live gap: resubscribing is left to the SDKs; counted here.
      ++ctx_.counters.gap_notices;
      ++ctx_.notices["centrifugo unsubscribe push"];
    }
    return;
  }
  auto s = j.find("subscribe");
  auto id = j.value("id", std::uint64_t{0});
  if (s == j.end() || !s->is_object() || id < 2 || id - 2 >= tracks_.size())
    return; // the connect reply, or something this client does not use
  track& t = tracks_[static_cast<std::size_t>(id - 2)];
  if (t.subscribed)
    return;
  if (t.on_subscribed(resume_, s->value("recovered", false), s->value("epoch", std::string{}),
                      s->value("offset", std::uint64_t{0}))) {
    ++ctx_.counters.gap_notices;
    ++ctx_.notices["centrifugo subscribed recovered=false"];
  }
  // The recovered publications travel inside the reply.
  t.delta_base.clear(); // with deltas: the reply's first publication is full
  if (auto pubs = s->find("publications"); pubs != s->end() && pubs->is_array()) {
    for (const auto& pj : *pubs) {
      pub_fields f;
      if (spec_.delta ? !delta_fields(t, pj, f) : !scan_pub_fields(pj.dump(), f)) {
        ++ctx_.counters.unparsed;
        continue;
      }
      on_publication(t, true, pj.value("offset", std::uint64_t{0}), f, now);
    }
  }
  established_if_all_subscribed();
}

bool subscriber::delta_fields(track& t, const nlohmann::json& pub, pub_fields& f) {
  auto d = pub.find("data");
  if (d == pub.end() || !d->is_string())
    return false;
  const auto& text = d->get_ref<const std::string&>();
  if (pub.value("delta", false)) {
    auto r = net::fossil::apply(t.delta_base, text, 16 * 1024 * 1024);
    if (!r)
      return false;
    t.delta_base = std::move(*r.target);
  } else {
    t.delta_base = text;
  }
  return scan_pub_fields(t.delta_base, f);
}

} // namespace herald::loadtest
