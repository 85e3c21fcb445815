// Fuzz target: an HTTP request as a client sends it. The bytes go through
// Beast's request_parser with the server's limits (the same way http_session
// reads them), then through our own checks: header count, route, the SSE
// query and Last-Event-ID, and the publish body.
#include "fuzz_check.hpp"

#include "net/wire/http/publish_request.hpp"
#include "net/http/request_check.hpp"
#include "net/core/session_options.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

using namespace herald;
using namespace herald::net;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  session_options opts; // documented defaults
  bhttp::request_parser<bhttp::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(opts.max_header_bytes));
  parser.body_limit(opts.max_publish_bytes);
  parser.eager(true);
  beast::error_code ec;
  // Feed in two pieces, as a socket might deliver them.
  std::string_view all{reinterpret_cast<const char*>(data), size};
  std::size_t split = size == 0 ? 0 : data[0] % (size + 1);
  std::string_view parts[2] = {all.substr(0, split), all.substr(split)};
  std::string pending;
  for (auto part : parts) {
    pending.append(part);
    while (!pending.empty() && !parser.is_done()) {
      auto used = parser.put(asio::buffer(pending.data(), pending.size()), ec);
      pending.erase(0, used);
      if (ec == bhttp::error::need_more) {
        ec = {};
        break;
      }
      if (ec)
        return 0; // a parse error: http_session answers 400/413/431
      if (used == 0)
        break;
    }
  }
  if (!parser.is_header_done())
    return 0;
  const auto& req = parser.get();
  std::string detail;
  auto e = http::check_head(req, opts.max_header_count, detail);
  FUZZ_CHECK(e == errc::none || e == errc::headers_too_large || e == errc::invalid_request);
  FUZZ_CHECK((e == errc::headers_too_large) == (http::header_count(req) > opts.max_header_count));
  // invalid_request is ambiguous framing only: a Transfer-Encoding that is
  // not one plain `chunked`, or one next to Content-Length (RFC 9112 s6).
  const auto te = req.count(bhttp::field::transfer_encoding);
  if (e == errc::invalid_request)
    FUZZ_CHECK(te > 0 && !detail.empty());
  if (e == errc::none && te > 0)
    FUZZ_CHECK(te == 1 && req.count(bhttp::field::content_length) == 0);
  if (e != errc::none)
    return 0; // http_session answers and closes
  http::route where = http::route::unknown;
  detail.clear();
  if (http::classify(req.target(), where, detail) != errc::none) {
    FUZZ_CHECK(!detail.empty());
    return 0;
  }
  (void)websocket::is_upgrade(req);
  (void)req.keep_alive();
  if (where == http::route::sse) {
    sse_subscription sub;
    std::string_view header;
    auto it = req.find("Last-Event-ID");
    if (it != req.end())
      header = it->value();
    auto r = http::parse_sse_request(req.target(), it != req.end() ? &header : nullptr,
                                     opts.max_channels_per_client, sub, detail);
    if (r == errc::none) {
      FUZZ_CHECK(!sub.channels.empty());
      FUZZ_CHECK(sub.channels.size() <= opts.max_channels_per_client);
      FUZZ_CHECK(sub.cursor.size() <= opts.max_channels_per_client);
    }
  } else if (where == http::route::publish && parser.is_done()) {
    http::publish_request pub;
    (void)http::parse_publish_request(req.body(), opts.max_channels_per_publish, pub, detail);
  }
  return 0;
}
