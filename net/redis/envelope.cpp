#include "net/redis/envelope.hpp"

#include "net/redis/redis_scripts.hpp"

#include "net/wire/channel_name.hpp"
#include "net/wire/json_input.hpp"
#include "net/wire/stream_position.hpp"

namespace herald::net::redis {

namespace {

// `<prefix>{<channel>}`: the part every name of the channel starts with.
std::string tagged(std::string_view prefix, std::string_view channel) {
  std::string s;
  s.reserve(prefix.size() + channel.size() + 2);
  s.append(prefix).append("{").append(channel).append("}");
  return s;
}

constexpr std::string_view pub_suffix = "}:pub";

} // namespace

channel_keys keys_for(std::string_view prefix, std::string_view channel) {
  auto t = tagged(prefix, channel);
  return {t + ":meta", t + ":history", t + ":pub"};
}

std::string idempotency_key_for(std::string_view prefix, std::string_view channel,
                                std::string_view key) {
  auto t = tagged(prefix, channel);
  t.append(":idem:").append(key);
  return t;
}

std::string channel_of_pubsub(std::string_view prefix, std::string_view pubsub) {
  auto head = prefix.size() + 1;
  if (pubsub.size() <= head + pub_suffix.size() || pubsub.substr(0, prefix.size()) != prefix ||
      pubsub[prefix.size()] != '{' ||
      pubsub.substr(pubsub.size() - pub_suffix.size()) != pub_suffix)
    return {};
  auto channel = pubsub.substr(head, pubsub.size() - head - pub_suffix.size());
  if (channel.find_first_of("{}") != std::string_view::npos)
    return {};
  return std::string{channel};
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
  if (ev == j.end() || !ev->is_string() ||
      !is_valid_event_name(ev->get_ref<const std::string&>())) {
    error = "invalid event";
    return false;
  }
  if (data == j.end()) {
    error = "missing data";
    return false;
  }
  net::publication_tags tags;
  if (auto t = j.find("tags"); t != j.end() && !t->is_null()) {
    std::string ignored, why;
    if (!net::read_tags(*t, net::event_tag_policy::refuse, tags, ignored, why)) {
      error = "invalid tags: " + why;
      return false;
    }
  }
  out.tags = std::move(tags);
  out.channel = ch->get<std::string>();
  out.epoch = ep->get<std::string>();
  out.offset = off->get<std::uint64_t>();
  out.event = ev->get<std::string>();
  out.data = dump_compact(*data);
  return true;
}

} // namespace herald::net::redis
