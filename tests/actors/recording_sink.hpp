// A session stand-in for connection actor tests: it implements frame_sink
// with a real subscription_table (net/core/subscription_table.hpp) and an inline
// shard, and records what would be written to the client. The same
// behaviour is covered end to end against real sockets in tests/e2e.
#pragma once

#include "net/wire/centrifugo/protocol.hpp"
#include "net/frame_sink.hpp"
#include "net/core/subscription_table.hpp"
#include "recording_subscriber.hpp"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace herald::test {

class recording_sink : public net::frame_sink, private net::subscription_table::output {
public:
  explicit recording_sink(net::metrics::transport kind = net::metrics::transport::ws)
    : table(std::make_unique<net::subscription_table>(
        kind, static_cast<net::subscription_table::output&>(*this))),
      kind_(kind) {}

  /// Makes the table encode for `kind` (call before use).
  void use(net::metrics::transport kind) {
    kind_ = kind;
    table = std::make_unique<net::subscription_table>(
      kind, static_cast<net::subscription_table::output&>(*this));
  }

  /// Makes the table and the publications speak Centrifugo's protocol.
  void use_centrifugo() {
    centrifugo_ = true;
    table->set_dialect(net::ws::dialect::centrifugo);
  }

  void deliver(std::string prefix, net::frame body, std::int64_t = 0) override {
    record(std::move(prefix), *body);
  }
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
              std::optional<net::stream_position> since, bool reject_unrecovered) override {
    table->expect(channel, request, std::move(id), std::move(since), reject_unrecovered);
  }
  void forget(std::string channel, std::optional<nlohmann::json> unsub_id) override {
    table->forget(channel, std::move(unsub_id));
  }
  void give_up(std::string channel, std::uint64_t request, std::string why) override {
    table->give_up(channel, request, why);
  }
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
  void write_publication(const net::publication& p, std::string id_line, std::int64_t) override {
    if (centrifugo_)
      record(std::move(id_line), *net::centrifugo::publication_push(p));
    else
      record(std::move(id_line), kind_ == net::metrics::transport::sse ? *p.sse : *p.ws);
  }
  void write_message(std::string id_line, std::string body) override {
    record(std::move(id_line), std::move(body));
  }
  net::metrics::transport kind_;
  bool centrifugo_ = false;
};

} // namespace herald::test
