#include "net/redis/envelope.hpp"

#include "net/redis/redis_scripts.hpp"

#include "net/channel_name.hpp"
#include "net/json_input.hpp"
#include "net/stream_position.hpp"

namespace herald::net::redis {

channel_keys keys_for(std::string_view prefix, std::string_view channel) {
  std::string p{prefix};
  return {p + "meta:" + std::string{channel}, p + "history:" + std::string{channel},
          p + "pub:" + std::string{channel}};
}

std::string channel_of_pubsub(std::string_view prefix, std::string_view pubsub) {
  std::string head = std::string{prefix} + "pub:";
  if (pubsub.size() <= head.size() || pubsub.substr(0, head.size()) != head)
    return {};
  return std::string{pubsub.substr(head.size())};
}

// The scripts are the files net/redis/publish.lua and sync.lua, compiled in
// by CMake (redis_scripts.hpp), so that other processes can run the very
// same file (`redis-cli --eval net/redis/publish.lua ...`).
const std::string publish_script{scripts::publish};
const std::string sync_script{scripts::sync};

bool parse_envelope(std::string_view text, envelope& out, std::string& error) {
  nlohmann::json j;
  if (!parse_client_json(text, j) || !j.is_object()) {
    error = "not a JSON object";
    return false;
  }
  auto ch = j.find("channel");
  auto ep = j.find("epoch");
  auto off = j.find("offset");
  auto ev = j.find("event");
  auto data = j.find("data");
  if (ch == j.end() || !ch->is_string() || validate_channel(ch->get_ref<const std::string&>())) {
    error = "invalid channel";
    return false;
  }
  if (ep == j.end() || !ep->is_string() || !is_valid_epoch(ep->get_ref<const std::string&>())) {
    error = "invalid epoch";
    return false;
  }
  if (off == j.end() || !off->is_number_unsigned() || off->get<std::uint64_t>() == 0) {
    error = "invalid offset";
    return false;
  }
  if (ev == j.end() || !ev->is_string() || !is_valid_event_name(ev->get_ref<const std::string&>())) {
    error = "invalid event";
    return false;
  }
  if (data == j.end()) {
    error = "missing data";
    return false;
  }
  out.channel = ch->get<std::string>();
  out.epoch = ep->get<std::string>();
  out.offset = off->get<std::uint64_t>();
  out.event = ev->get<std::string>();
  out.data = dump_compact(*data);
  return true;
}

} // namespace herald::net::redis
