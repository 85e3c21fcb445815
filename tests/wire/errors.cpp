#include "net/wire/errors.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <string_view>
#include <system_error>

using herald::errc;
using herald::error_body;
using herald::herald_category;
using herald::info;
using herald::make_error_code;
using nlohmann::json;

namespace {

struct row {
  errc e;
  std::string_view code;
};

// Every enumerator, in enum order, with its expected JSON code.
const row all[] = {
  {errc::none, "none"},
  {errc::invalid_json, "invalid_json"},
  {errc::invalid_request, "invalid_request"},
  {errc::unknown_op, "unknown_op"},
  {errc::invalid_channel, "invalid_channel"},
  {errc::invalid_event, "invalid_event"},
  {errc::invalid_cursor, "invalid_cursor"},
  {errc::invalid_since, "invalid_since"},
  {errc::payload_too_large, "payload_too_large"},
  {errc::too_many_channels, "too_many_channels"},
  {errc::already_subscribed, "already_subscribed"},
  {errc::not_subscribed, "not_subscribed"},
  {errc::not_found, "not_found"},
  {errc::method_not_allowed, "method_not_allowed"},
  {errc::unsupported_data, "unsupported_data"},
  {errc::slow_client, "slow_client"},
  {errc::shutting_down, "shutting_down"},
  {errc::unavailable, "unavailable"},
  {errc::cancelled, "cancelled"},
  {errc::unauthorized, "unauthorized"},
  {errc::forbidden, "forbidden"},
  {errc::token_expired, "token_expired"},
  {errc::internal, "internal"},
  {errc::headers_too_large, "headers_too_large"},
  {errc::header_timeout, "header_timeout"},
  {errc::rate_limited, "rate_limited"},
  {errc::too_many_connections, "too_many_connections"},
  {errc::too_many_subscribes, "too_many_subscribes"},
  {errc::upgrade_required, "upgrade_required"},
};

} // namespace

TEST_CASE("the enum is covered", "[errors]") {
  for (std::size_t i = 0; i < std::size(all); ++i)
    CHECK(static_cast<std::size_t>(all[i].e) == i);
  CHECK(herald::errc_count == std::size(all));
}

TEST_CASE("every errc has its code, a status and a close code", "[errors]") {
  for (const auto& r : all) {
    const auto& row = info(r.e);
    INFO(r.code);
    CHECK_FALSE(row.code.empty());
    CHECK(row.code == r.code); // the table follows the enum
    CHECK_FALSE(row.message.empty());
    if (r.e == errc::none) {
      CHECK(row.http_status == 200);
    } else {
      CHECK(row.http_status >= 400);
      CHECK(row.http_status <= 599);
    }
    CHECK(row.close_code >= 1000);
    CHECK(row.close_code <= 4999);
    // RFC 6455 7.4.1: never sent in a close frame.
    CHECK(row.close_code != 1004);
    CHECK(row.close_code != 1005);
    CHECK(row.close_code != 1006);
    CHECK(row.close_code != 1015);
  }
}

TEST_CASE("the codes are unique", "[errors]") {
  std::set<std::string_view> codes;
  for (const auto& r : all)
    codes.insert(info(r.e).code);
  CHECK(codes.size() == std::size(all));
}

TEST_CASE("HTTP statuses and close codes of docs/protocol.md", "[errors]") {
  CHECK(info(errc::invalid_json).http_status == 400);
  CHECK(info(errc::invalid_request).http_status == 400);
  CHECK(info(errc::invalid_channel).http_status == 400);
  CHECK(info(errc::invalid_event).http_status == 400);
  CHECK(info(errc::invalid_cursor).http_status == 400);
  CHECK(info(errc::too_many_channels).http_status == 400);
  CHECK(info(errc::not_found).http_status == 404);
  CHECK(info(errc::method_not_allowed).http_status == 405);
  CHECK(info(errc::payload_too_large).http_status == 413);
  CHECK(info(errc::internal).http_status == 500);
  CHECK(info(errc::unsupported_data).close_code == 1003);
  CHECK(info(errc::payload_too_large).close_code == 1009);
  CHECK(info(errc::shutting_down).close_code == 1012);
  CHECK(info(errc::slow_client).close_code == 1013);
  CHECK(info(errc::internal).close_code == 1011);
  CHECK(info(errc::headers_too_large).http_status == 431);
  CHECK(info(errc::header_timeout).http_status == 408);
  CHECK(info(errc::too_many_connections).http_status == 429);
  CHECK(info(errc::rate_limited).close_code == 1008);
  CHECK(info(errc::too_many_subscribes).close_code == 1008);
}

TEST_CASE("out-of-range values map to internal", "[errors][bad-input]") {
  CHECK(info(static_cast<errc>(herald::errc_count)).code == "internal");
  CHECK(info(static_cast<errc>(255)).code == "internal");
  CHECK(&info(static_cast<errc>(200)) == &info(errc::internal));
}

TEST_CASE("error_body is {\"error\":{\"code\",\"message\"}}", "[errors]") {
  for (const auto& r : all) {
    INFO(r.code);
    auto j = json::parse(error_body(r.e));
    CHECK(j.size() == 1);
    REQUIRE(j.contains("error"));
    CHECK(j.at("error").size() == 2);
    CHECK(j.at("error").at("code") == r.code);
    CHECK(j.at("error").at("message") == info(r.e).message);
  }
  CHECK(error_body(errc::not_found) ==
        R"({"error":{"code":"not_found","message":"no such route"}})");
}

TEST_CASE("error_body message override", "[errors]") {
  CHECK(error_body(errc::invalid_request, "request head larger than 8192 bytes") ==
        R"({"error":{"code":"invalid_request","message":"request head larger than 8192 bytes"}})");
  auto j = json::parse(error_body(errc::invalid_channel, "quote \" newline \n nul"));
  CHECK(j.at("error").at("code") == "invalid_channel");
  CHECK(j.at("error").at("message") == "quote \" newline \n nul");
  // Invalid UTF-8 in a message still gives valid JSON (U+FFFD).
  std::string body;
  CHECK_NOTHROW(body = error_body(errc::invalid_channel, "bad \xff byte"));
  CHECK(json::parse(body).at("error").at("message") == "bad \xef\xbf\xbd byte");
  CHECK(body.find('\n') == std::string::npos);
}

TEST_CASE("std::error_code integration", "[errors]") {
  CHECK(std::string(herald_category().name()) == "herald");
  std::error_code ec = errc::invalid_cursor; // is_error_code_enum
  CHECK(ec.category() == herald_category());
  CHECK(ec.value() == static_cast<int>(errc::invalid_cursor));
  CHECK(ec == make_error_code(errc::invalid_cursor));
  CHECK(ec == errc::invalid_cursor);
  CHECK(ec != errc::invalid_since);
  CHECK(ec.message() == std::string(info(errc::invalid_cursor).message));
  CHECK(static_cast<bool>(ec));
}
