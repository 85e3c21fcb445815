#include "net/redis/envelope.hpp"

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

// The epoch is created with the first publication (or sync) of a channel and
// lives as long as its keys: both expire after `ttl` seconds without a
// publication, and the next publication starts a new epoch, so an old cursor
// gets an explicit gap instead of offsets that mean something else.
const std::string publish_script = R"lua(
local epoch = redis.call('HGET', KEYS[1], 'epoch')
if not epoch then
  epoch = ARGV[7]
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[1], 'epoch', epoch, 'offset', 0)
end
local offset = redis.call('HINCRBY', KEYS[1], 'offset', 1)
local env = '{"channel":' .. cjson.encode(ARGV[2]) .. ',"epoch":' .. cjson.encode(epoch) ..
            ',"offset":' .. offset .. ',"event":' .. cjson.encode(ARGV[3]) ..
            ',"data":' .. ARGV[4] .. '}'
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[5], offset .. '-0', 'p', env)
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('EXPIRE', KEYS[2], ARGV[6])
redis.call('PUBLISH', ARGV[1], env)
return {epoch, offset}
)lua";

const std::string sync_script = R"lua(
if redis.call('HSETNX', KEYS[1], 'epoch', ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], 'offset', 0)
  redis.call('DEL', KEYS[2])
  redis.call('EXPIRE', KEYS[1], ARGV[3])
end
local m = redis.call('HMGET', KEYS[1], 'epoch', 'offset')
local entries = redis.call('XRANGE', KEYS[2], '(' .. ARGV[2] .. '-0', '+')
return {m[1], tonumber(m[2]), entries}
)lua";

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
