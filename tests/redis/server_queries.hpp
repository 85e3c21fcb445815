// What a redis_server says about its clients, asked on a fresh blocking
// connection (redis_server::command): the checks of the subscriber tests.
#pragma once

#include "redis_server.hpp"

#include <string>

namespace herald::test {

/// The number after `key` in INFO `section` ("cmdstat_subscribe:calls=" in
/// "cmdstat_subscribe:calls=3,usec=..." -> 3); 0 when absent.
inline long long info_number(redis_server& srv, const std::string& section,
                             const std::string& key) {
  auto info = srv.command({"INFO", section});
  auto pos = info.str.find(key);
  if (pos == std::string::npos)
    return 0;
  return std::stoll(info.str.substr(pos + key.size()));
}

/// Calls of `command` (INFO commandstats); 0 when absent.
inline long long command_calls(redis_server& srv, const std::string& command) {
  return info_number(srv, "commandstats", "cmdstat_" + command + ":calls=");
}

/// Error replies of kind `prefix` ("MOVED", "ASK") the server sent (INFO errorstats).
inline long long error_count(redis_server& srv, const std::string& prefix) {
  return info_number(srv, "errorstats", "errorstat_" + prefix + ":count=");
}

/// Classic (SUBSCRIBE) subscribers of `channel`; -1 when the reply is off.
inline long long numsub(redis_server& srv, const std::string& channel) {
  auto r = srv.command({"PUBSUB", "NUMSUB", channel});
  return r.elements.size() == 2 ? r.elements[1].number : -1;
}

/// Sharded (SSUBSCRIBE) subscribers of `channel`; -1 when the reply is off.
inline long long shardnumsub(redis_server& srv, const std::string& channel) {
  auto r = srv.command({"PUBSUB", "SHARDNUMSUB", channel});
  return r.elements.size() == 2 ? r.elements[1].number : -1;
}

} // namespace herald::test
