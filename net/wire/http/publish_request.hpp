// POST /v1/publish: the request body codec (pure; docs/protocol.md "Publish").
#pragma once

#include "net/wire/errors.hpp"
#include "net/wire/tags.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace herald::net::http {

/// A validated publish request.
struct publish_request {
  /// Valid channel names in request order; distinct unless parsed with
  /// channel_repeats::publish_each.
  std::vector<std::string> channels;
  std::string event; ///< valid event name (json_input.hpp)
  std::string data;  ///< the `data` value as compact JSON text
  /// The publisher's idempotency key (docs/protocol.md "Idempotent
  /// publishing"): empty for none, else 1-128 printable ASCII characters
  /// (0x21-0x7e). A publish that repeats a key within the window gets the
  /// offsets of the first and delivers nothing.
  std::string idempotency_key{};
  /// The publication's version (docs/protocol.md "Versioned publishing"),
  /// e.g. the ledger sequence: 0 for none, else 1 to 2^64-1. A publication
  /// whose version is not above the channel's last accepted one (in the
  /// same `version_epoch`) is suppressed: neither stored nor delivered.
  std::uint64_t version = 0;
  /// The generation the versions count in: empty, or 1-64 printable ASCII
  /// characters; a version in another epoch than the channel's last is
  /// accepted and starts that epoch's count.
  std::string version_epoch{};
  /// The publisher's tags besides `event` (docs/protocol.md "Tags"; empty:
  /// none), which subscribers' filters match (net/wire/tags_filter.hpp).
  publication_tags tags{};
};

/// An idempotency key: 1-128 characters of 0x21-0x7e.
bool is_valid_idempotency_key(std::string_view key) noexcept;

/// Takes the `Idempotency-Key` header into `req`. The body's
/// `idempotency_key`, when both are given, must be the same key.
/// @returns `{}` or errc::invalid_request (with `detail`).
std::error_code apply_idempotency_header(std::string_view header, publish_request& req,
                                         std::string& detail);

/// Parses an HTTP request body that must be one JSON object (POST
/// /v1/publish, Centrifugo's server API): parse_client_json with the object
/// itself one level above `max_json_depth`, so its values may nest that
/// deep. Never throws.
/// @param detail on failure, what is wrong and where: "the body is not valid
///        JSON at byte <N>: <reason>", "the body has a duplicate key \"<k>\"",
///        "the body nests deeper than 64 levels ..." or "the body must be a
///        JSON object, not an array" (a string, null, ...).
/// @returns false (with `detail`) when the body is not such an object; the
///          caller answers errc::invalid_json.
bool parse_body_object(std::string_view body, nlohmann::json& doc, std::string& detail);

/// The fields a POST /v1/publish body may have; any other is refused.
inline constexpr std::string_view publish_fields[] = {
  "channel", "channels", "event", "data", "idempotency_key", "tags", "version", "version_epoch"};

/// Refuses a body field not in `known` (a typo such as "verison" would
/// otherwise drop the check the field asks for), the one check every HTTP
/// body codec runs on its own list. Never throws.
/// @param doc a JSON object.
/// @param detail on failure: `unknown field "<name>" (known: <list>)`, the
///        name cut at 64 bytes (then "...").
/// @returns `{}` or errc::invalid_request.
std::error_code check_known_fields(const nlohmann::json& doc, const std::string_view* known,
                                   std::size_t known_count, std::string& detail);

/// check_known_fields on a list such as publish_fields.
template <std::size_t N>
std::error_code check_known_fields(const nlohmann::json& doc, const std::string_view (&known)[N],
                                   std::string& detail) {
  return check_known_fields(doc, known, N, detail);
}

/// How parse_publish_request treats a channel named twice.
enum class channel_repeats { count_once, publish_each };

/// Parses and validates a publish body:
/// `{"channel":"stream:42"|"channels":[...],"event":"...","data":<any JSON>,
/// "idempotency_key":"...","tags":{"k":"v",...},"version":N,"version_epoch":"..."}`
/// (the key, the tags and the version optional; tags as net/wire/tags.hpp
/// read_tags() bounds them, and a tag `event` is refused: the event name is
/// `event`, which filters see as that tag; `version` an integer 1 to 2^64-1
/// or a string of its decimal digits, for JSON parsers that cannot hold 64
/// bits; `version_epoch` only with a version).
/// Any other field is refused (check_known_fields with publish_fields).
/// Exactly one of `channel` / `channels` must be present; repeated channels
/// count once unless `repeats` is channel_repeats::publish_each (Centrifugo's
/// /api/broadcast: one publication and one response per entry, in order).
/// Never throws.
/// @param max_channels the most channels one request may name (entries, with
///        publish_each).
/// @param detail receives a human-readable explanation on error; for an
///        invalid channel channel_error_detail() (with "channels[<i>]: "
///        before it when the body gave an array).
/// @returns `{}` or one of errc::invalid_json, invalid_request (also for bad
///          `tags`), invalid_channel, invalid_event, too_many_channels.
std::error_code parse_publish_request(std::string_view body, std::size_t max_channels,
                                      publish_request& out, std::string& detail,
                                      channel_repeats repeats = channel_repeats::count_once);

/// The validation of parse_publish_request on a body already parsed as the
/// JSON object `doc` (Centrifugo's server API builds one from its own body,
/// net/wire/http/server_api.hpp): the same checks and errors except
/// errc::invalid_json.
std::error_code read_publish_request(const nlohmann::json& doc, std::size_t max_channels,
                                     publish_request& out, std::string& detail,
                                     channel_repeats repeats = channel_repeats::count_once);

/// Response body: `{"offsets":{"<channel>":<offset>,...}}`, plus
/// `"suppressed":{"<channel>":"<reason>",...}` for the channels whose
/// publication was suppressed (`suppressed[i]` non-empty: the reason, e.g.
/// "stale_version"; their offset is the channel's unchanged one).
/// @pre channels.size() == offsets.size(); suppressed empty or the same size
std::string encode_publish_response(const std::vector<std::string>& channels,
                                    const std::vector<std::uint64_t>& offsets,
                                    const std::vector<std::string>& suppressed = {});

} // namespace herald::net::http
