// Fuzz target: a WebSocket upgrade request as a client sends it, through
// Beast's request parser and then Herald's own opening handshake, as
// http_session and ws::accept_upgrade run it: is_upgrade, check_upgrade
// (a Host, version 13, a 16-byte base64 key), the subprotocol offer, the
// permessage-deflate offers (RFC 7692 section 5), the accept hash
// and the 101 answer (RFC 6455 section 4.2). Whatever the client sends, the
// answer is one well-formed head: no field of the request reaches it except
// through the accept hash.
#include "fuzz_check.hpp"

#include "net/wire/ws/upgrade.hpp"
#include "net/ws/accept_key.hpp"

#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace bhttp = boost::beast::http;
using namespace herald;
using namespace herald::net;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  bhttp::request_parser<bhttp::string_body> parser;
  parser.header_limit(8 * 1024);
  parser.body_limit(0);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(data, size), ec);
  if (!parser.is_header_done())
    return 0;
  const auto& req = parser.get();
  if (!boost::beast::websocket::is_upgrade(req))
    return 0;
  std::string detail;
  auto version = req[bhttp::field::sec_websocket_version];
  auto key = req[bhttp::field::sec_websocket_key];
  auto host = req[bhttp::field::host];
  auto e = ws::check_upgrade({host.data(), host.size()}, {version.data(), version.size()},
                             {key.data(), key.size()}, detail);
  FUZZ_CHECK(e == errc::none || e == errc::upgrade_required || e == errc::invalid_request);
  if (e != errc::none) {
    FUZZ_CHECK(!detail.empty());
    return 0;
  }
  auto protocols = req[bhttp::field::sec_websocket_protocol];
  const bool protobuf =
    ws::offers_subprotocol({protocols.data(), protocols.size()}, "centrifuge-protobuf");
  auto accept = ws::accept_key({key.data(), key.size()});
  FUZZ_CHECK(accept.size() == 28 && accept.back() == '=');
  std::string offers;
  for (auto [it, end] = req.equal_range(bhttp::field::sec_websocket_extensions); it != end; ++it)
    offers.append(it->value().data(), it->value().size()).push_back(',');
  const bool deflate = ws::accepts_deflate(offers);
  auto head = ws::encode_upgrade_response(accept, protobuf ? "centrifuge-protobuf" : "", deflate);
  FUZZ_CHECK(head.rfind("HTTP/1.1 101 Switching Protocols\r\n", 0) == 0);
  FUZZ_CHECK(head.size() >= 4 && head.compare(head.size() - 4, 4, "\r\n\r\n") == 0);
  FUZZ_CHECK(head.find("\r\n\r\n") == head.size() - 4); // one head, nothing smuggled after it
  FUZZ_CHECK((head.find("Sec-WebSocket-Protocol") != std::string::npos) == protobuf);
  FUZZ_CHECK((head.find("Sec-WebSocket-Extensions: permessage-deflate") != std::string::npos) ==
             deflate);
  FUZZ_CHECK(!deflate || offers.find("permessage-deflate") != std::string::npos);
  return 0;
}
