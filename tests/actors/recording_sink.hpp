// A session stand-in for connection actor tests: it implements session_control
// with a real subscription_table (net/core/subscription_table.hpp) and an inline
// shard, and records what would be written to the client. The same
// behaviour is covered end to end against real sockets in tests/e2e.
#pragma once

#include "actors/messages.hpp"
#include "net/session_control.hpp"
#include "net/core/subscription_table.hpp"
#include "net/wire/sse/session_codec.hpp"
#include "net/wire/ws/session_codec.hpp"
#include "recording_subscriber.hpp"

#include <caf/send.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace herald::test {

class recording_sink : public net::session_control, private net::subscription_table::output {
public:
  explicit recording_sink(net::metrics::transport kind = net::metrics::transport::ws)
    : table(std::make_unique<net::subscription_table>(
        kind, codec_for(kind), static_cast<net::subscription_table::output&>(*this))),
      codec_(&codec_for(kind)) {}

  /// Makes the table encode for `kind` (call before use).
  void use(net::metrics::transport kind) {
    codec_ = &codec_for(kind);
    table = std::make_unique<net::subscription_table>(
      kind, *codec_, static_cast<net::subscription_table::output&>(*this));
  }

  /// Makes the table and the publications speak Centrifugo's protocol.
  void use_centrifugo() {
    codec_ = &net::ws::session_codec_for(net::ws::dialect::centrifugo);
    table->set_codec(*codec_);
  }

  /// The last bytes the session's codec writes for the close (SSE: the
  /// final event block; empty if none, or not closed).
  std::string final_event() const {
    return closed ? codec_->close(closed->code, closed->text).second : std::string{};
  }

  /// Gives up every pending subscribe due by `now` as the session's shard
  /// timer does, and tells `actor` of each as the session bridge does.
  void expire_subscribes(const caf::actor& actor, net::subscription_table::time_point now) {
    for (auto& [channel, request] : table->give_up_overdue(now, "the channel did not answer"))
      caf::anon_send(actor, actors::subscribe_timeout_atom_v, std::move(channel), request);
  }

  /// Pending subscribes get this due time (the session's: now + the subscribe
  /// timeout); default: none.
  std::optional<net::subscription_table::time_point> due;

  void send(std::string message) override { record({}, std::move(message)); }
  void close(net::close_request req) override {
    std::lock_guard<std::mutex> g{mtx};
    if (!closed)
      closed = std::move(req);
  }
  void begin(std::vector<std::string> channels,
             std::vector<net::sse::cursor_entry> cursor) override {
    table->begin(channels, cursor);
  }
  void expect(std::string channel, std::uint64_t request, nlohmann::json id,
              std::optional<net::stream_position> since, bool reject_unrecovered,
              bool delta = false, net::tags_filter_ptr filter = nullptr) override {
    table->expect(channel, request, std::move(id), std::move(since), reject_unrecovered,
                  due.value_or(net::subscription_table::time_point{}), delta, std::move(filter));
  }
  void forget(std::string channel, std::optional<nlohmann::json> unsub_id) override {
    table->forget(channel, std::move(unsub_id));
  }
  void revoke(std::string channel, std::string why) override { table->revoke(channel, why); }
  net::shard& home() noexcept override { return shard; }
  void on_answer(const net::subscription_answer& a) override { table->on_answer(a); }
  void on_publication(const net::publication_ptr& p) override { table->on_publication(p); }

  std::mutex mtx;
  std::vector<std::string> prefixes;
  std::vector<std::string> bodies;
  std::optional<net::close_request> closed;
  std::unique_ptr<net::subscription_table> table;
  inline_shard shard;

private:
  void record(std::string prefix, std::string body) {
    std::lock_guard<std::mutex> g{mtx};
    prefixes.push_back(std::move(prefix));
    bodies.push_back(std::move(body));
  }
  static const net::session_codec& codec_for(net::metrics::transport kind) {
    static const net::sse::session_codec sse{500, false};
    if (kind == net::metrics::transport::sse)
      return sse;
    return net::ws::session_codec_for(net::ws::dialect::herald);
  }
  void write_publication(const net::publication&, std::string prefix, const net::frame& body,
                         std::int64_t, net::subscription_table::conflation_key) override {
    // WebSocket: the prefix is the frame header, which the tests do not read.
    record(codec_->carries_cursor() ? std::move(prefix) : std::string{}, *body);
  }
  void write_message(std::string id_line, std::string body) override {
    record(std::move(id_line), std::move(body));
  }
  const net::session_codec* codec_;
};

} // namespace herald::test
