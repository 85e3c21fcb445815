// session_bridge: implements net::session_events by sending each event to a
// connection actor. Owned by the session; called on the session's shard thread.
// After on_closed it drops its actor handle, which breaks the
// session -> bridge -> actor -> session ownership cycle.
#pragma once

#include "net/session_events.hpp"

#include <caf/actor.hpp>

#include <functional>

namespace herald::actors {

class session_bridge : public net::session_events {
public:
  /// @param on_closed called once after the actor was told (for bookkeeping).
  session_bridge(caf::actor connection, std::function<void(net::close_reason)> on_closed);

  void on_text(std::string message) override;
  void on_subscribe_timeout(std::string channel, std::uint64_t request) override;
  void on_closed(net::close_reason reason) override;

private:
  caf::actor connection_;
  std::function<void(net::close_reason)> on_closed_;
};

} // namespace herald::actors
