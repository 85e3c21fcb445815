// Fuzz target: the body of POST /v1/publish (net/wire/http/publish_request).
#include "fuzz_check.hpp"

#include "net/wire/channel_name.hpp"
#include "net/wire/http/publish_request.hpp"
#include "net/wire/json_input.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

using namespace herald::net;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body{reinterpret_cast<const char*>(data), size};
  http::publish_request req;
  std::string detail;
  if (http::parse_publish_request(body, 64, req, detail))
    return 0;
  FUZZ_CHECK(!req.channels.empty() && req.channels.size() <= 64);
  for (const auto& c : req.channels)
    FUZZ_CHECK(!validate_channel(c));
  FUZZ_CHECK(is_valid_event_name(req.event));
  nlohmann::json data_value;
  FUZZ_CHECK(parse_client_json(req.data, data_value));
  std::vector<std::uint64_t> offsets(req.channels.size(), 1);
  nlohmann::json reply;
  FUZZ_CHECK(parse_client_json(http::encode_publish_response(req.channels, offsets), reply));
  return 0;
}
