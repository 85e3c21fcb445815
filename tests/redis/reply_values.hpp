// Reply values built by hand, for the pure tests of what Herald makes of
// Redis's replies (cluster_map.cpp, script_reply.cpp).
#pragma once

#include "net/redis/reply.hpp"

#include <string>
#include <utility>
#include <vector>

namespace herald::test {

inline net::redis::reply integer(long long n) {
  net::redis::reply r;
  r.type = net::redis::reply::integer;
  r.number = n;
  return r;
}

inline net::redis::reply string(std::string s) {
  net::redis::reply r;
  r.type = net::redis::reply::string;
  r.str = std::move(s);
  return r;
}

inline net::redis::reply array(std::vector<net::redis::reply> e) {
  net::redis::reply r;
  r.type = net::redis::reply::array;
  r.elements = std::move(e);
  return r;
}

} // namespace herald::test
