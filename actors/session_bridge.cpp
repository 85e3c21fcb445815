#include "actors/session_bridge.hpp"

#include "actors/messages.hpp"

#include <caf/send.hpp>

namespace herald::actors {

session_bridge::session_bridge(caf::actor connection,
                               std::function<void(net::close_reason)> on_closed)
  : connection_(std::move(connection)),
    on_closed_(std::move(on_closed)) {}

void session_bridge::on_text(std::string message) {
  caf::anon_send(connection_, text_atom_v, std::move(message));
}

void session_bridge::on_subscribe_timeout(std::string channel, std::uint64_t request) {
  caf::anon_send(connection_, subscribe_timeout_atom_v, std::move(channel), request);
}

void session_bridge::on_closed(net::close_reason reason) {
  caf::anon_send(connection_, closed_atom_v, static_cast<std::uint8_t>(reason));
  connection_ = nullptr;
  if (auto f = std::move(on_closed_))
    f(reason);
}

} // namespace herald::actors
