// What a redis_server says about its clients, asked on a fresh blocking
// connection (redis_server::command): the checks of the subscriber tests.
#pragma once

#include "redis_server.hpp"

#include <string>

namespace herald::test {

/// "cmdstat_subscribe:calls=3,usec=..." -> 3 (0 when absent).
inline long long command_calls(redis_server& srv, const std::string& command) {
  auto info = srv.command({"INFO", "commandstats"});
  auto key = "cmdstat_" + command + ":calls=";
  auto pos = info.str.find(key);
  if (pos == std::string::npos)
    return 0;
  return std::stoll(info.str.substr(pos + key.size()));
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
