#include "net/redis/reply.hpp"

#include <catch2/catch.hpp>

using herald::net::redis::reply;

TEST_CASE("reply: disconnected and error codes", "[redis][reply]") {
  auto d = reply::disconnected();
  CHECK(d.is_error());
  CHECK(d.is_disconnected());
  CHECK(d.str == "disconnected");

  auto e = reply::make_error("NOSCRIPT No matching script. Please use EVAL.");
  CHECK(e.has_error_code("NOSCRIPT"));
  CHECK_FALSE(e.has_error_code("NOSCRIPTS"));
  CHECK_FALSE(e.has_error_code("ERR"));
  CHECK_FALSE(e.is_disconnected());
  CHECK(reply::make_error("NOSCRIPT").has_error_code("NOSCRIPT"));

  reply s;
  s.type = reply::string;
  s.str = "NOSCRIPT";
  CHECK_FALSE(s.has_error_code("NOSCRIPT"));
}

TEST_CASE("reply: debug form", "[redis][reply]") {
  reply a;
  a.type = reply::array;
  reply i;
  i.type = reply::integer;
  i.number = 42;
  reply s;
  s.type = reply::string;
  s.str = "x";
  reply inner;
  inner.type = reply::array;
  inner.elements = {s, reply{}};
  a.elements = {i, inner, reply::make_error("ERR no")};
  CHECK(a.to_string() == "[42,[\"x\",nil],-ERR no]");
}
