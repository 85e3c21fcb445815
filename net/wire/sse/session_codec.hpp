// sse::session_codec: what an SSE stream writes (WHATWG HTML "Server-sent
// events"; docs/protocol.md "Server-Sent Events"), as a net::session_codec.
// Every event carries the connection's cursor in its `id:` line (the
// subscription table adds it: carries_cursor()); publications are their
// shared `p.sse` block (or, for a connection that asked `?envelope=1`, the
// shared `p.sse_envelope` block, which names the channel, built once on
// first use); a live gap or a failed recovery is a `herald.gap` event;
// there are no command ids, so replies and per-command errors are
// empty (nothing written). Closes end with a last event where one says why:
// 1013 (slow client) `herald.gap` with reason `slow_client`, 4002 (token
// expired) `herald.token_expired`, 1012 (service restart) `herald.shutdown`
// with the `retry:` hint given at construction. Pure, const, thread-safe.
#pragma once

#include "net/wire/session_codec.hpp"

namespace herald::net::sse {

class session_codec final : public net::session_codec {
public:
  /// @param shutdown_retry_ms the `retry:` hint (ms) of the shutdown event
  ///        (--shutdown-retry-ms).
  /// @param envelope publications are written with the channel envelope
  ///        (`data: {"channel":...,"data":...}`, the request's `?envelope=1`,
  ///        docs/protocol.md "Subscribe over SSE"); false: the data alone.
  session_codec(unsigned shutdown_retry_ms, bool envelope)
    : shutdown_retry_ms_(shutdown_retry_ms), envelope_(envelope) {}

  /// Whether publications carry the channel envelope (the constructor's
  /// `envelope`).
  bool envelope() const noexcept { return envelope_; }

  bool carries_cursor() const noexcept override { return true; }
  std::string cursor_event(const std::vector<std::string_view>& conflated) const override;
  publication_bytes publication_message(const publication& p) const override;
  std::pair<std::uint16_t, std::string> close(std::uint16_t code,
                                              std::string_view reason) const override;
  std::string pending_error(const nlohmann::json&, std::string_view, errc,
                            std::string_view) const override {
    return {};
  }
  std::string unsubscribed(const nlohmann::json&, std::string_view) const override { return {}; }
  std::string gap(std::string_view channel, std::string_view reason) const override;
  bool gap_ends_subscription() const noexcept override { return false; }
  bool replay_in_reply() const noexcept override { return false; }
  std::string subscribed(const nlohmann::json& id, std::string_view channel,
                         const stream_position& position, bool recovering, bool recovered,
                         std::string_view reason,
                         const std::vector<const publication*>& replay, bool delta = false,
                         bool cached = false, bool conflated = false) const override;
  std::string refresh_required(std::int64_t) const override { return {}; }
  std::string revoked(std::string_view, std::string_view) const override { return {}; }
  std::string unrecoverable(const nlohmann::json&, std::string_view) const override { return {}; }

private:
  unsigned shutdown_retry_ms_;
  bool envelope_;
};

} // namespace herald::net::sse
