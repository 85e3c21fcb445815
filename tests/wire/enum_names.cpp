#include "net/wire/enum_names.hpp"

#include "net/wire/centrifugo/protocol.hpp"
#include "net/wire/close_reason.hpp"

#include <catch2/catch.hpp>

#include <string_view>

using herald::net::close_reason;
using herald::net::enum_name;

namespace {

enum class colour : unsigned char { red, green, blue };
enum class status_code : int { ok = 200, created = 201, accepted = 202 };

std::string_view name(colour c) {
  return enum_name<colour::red, colour::blue>(c, {"red", "green", "blue"}, "?");
}

std::string_view name(status_code c) {
  return enum_name<status_code::ok, status_code::accepted>(c, {"OK", "Created", "Accepted"}, "?");
}

} // namespace

TEST_CASE("enum_name: each value its name, in declaration order", "[enum_names]") {
  CHECK(name(colour::red) == "red");
  CHECK(name(colour::green) == "green");
  CHECK(name(colour::blue) == "blue");
  // An enum that starts at another number than 0: names[0] is First's.
  CHECK(name(status_code::ok) == "OK");
  CHECK(name(status_code::accepted) == "Accepted");
}

TEST_CASE("enum_name: a number outside First..Last gets the fallback", "[enum_names]") {
  CHECK(name(static_cast<colour>(3)) == "?");
  CHECK(name(static_cast<colour>(255)) == "?");
  CHECK(name(static_cast<status_code>(199)) == "?");
  CHECK(name(static_cast<status_code>(203)) == "?");
  CHECK(name(static_cast<status_code>(-1)) == "?");
}

TEST_CASE("enum_name: usable at compile time (close_reason's names)", "[enum_names]") {
  static_assert(to_string(close_reason::client) == "client");
  static_assert(to_string(close_reason::auth) == "auth");
  static_assert(to_string(static_cast<close_reason>(200)) == "unknown");
  CHECK(to_string(close_reason::heartbeat_timeout) == "heartbeat_timeout");
}

TEST_CASE("enum_name: Centrifugo's error messages by code 100-112", "[enum_names]") {
  using herald::net::centrifugo::error_code;
  using herald::net::centrifugo::message_of;
  CHECK(message_of(error_code::internal) == "internal server error");
  CHECK(message_of(error_code::bad_request) == "bad request");
  CHECK(message_of(error_code::unrecoverable_position) == "unrecoverable position");
  CHECK(message_of(static_cast<error_code>(99)) == "internal server error");
  CHECK(message_of(static_cast<error_code>(113)) == "internal server error");
}
