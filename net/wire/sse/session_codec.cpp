#include "net/wire/sse/session_codec.hpp"

#include "net/wire/sse/encoder.hpp"

namespace herald::net::sse {

std::string session_codec::cursor_event(const std::vector<std::string_view>& conflated) const {
  return encode_cursor_event(conflated);
}

publication_bytes session_codec::publication_message(const publication& p) const {
  static const std::string no_header;
  if (!envelope_)
    return {no_header, p.sse};
  // Built by the first enveloped subscriber of this publication, on its
  // shard; every other one (any shard) shares the bytes.
  std::call_once(p.sse_envelope_once, [&p] {
    p.sse_envelope = make_frame(encode_enveloped_event(p.event, p.channel, p.data));
  });
  return {no_header, p.sse_envelope};
}

std::pair<std::uint16_t, std::string> session_codec::close(std::uint16_t code,
                                                           std::string_view) const {
  switch (code) {
  case 1012: // service restart: reconnect soon, to another instance
    return {code, encode_shutdown(shutdown_retry_ms_)};
  case 1013: // slow client: what it missed is in history, the cursor recovers it
    return {code, encode_gap({}, "slow_client")};
  case 4002: // token expired: reconnect with a new token
    return {code, encode_token_expired()};
  default:
    return {code, {}};
  }
}

std::string session_codec::gap(std::string_view channel, std::string_view reason) const {
  return encode_gap(channel, reason);
}

std::string session_codec::subscribed(const nlohmann::json&, std::string_view channel,
                                      const stream_position&, bool recovering, bool recovered,
                                      std::string_view reason,
                                      const std::vector<const publication*>&, bool, bool,
                                      bool) const {
  // No reply on SSE; a recovery that failed is said as a gap before the
  // channel's publications go on.
  return recovering && !recovered ? encode_gap(channel, reason) : std::string{};
}

} // namespace herald::net::sse
