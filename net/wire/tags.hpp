// tags: a publication's tags, the string->string map Centrifugo calls
// Publication.tags (centrifugal/protocol client.proto, field 7), which
// subscribers' filters (net/wire/tags_filter.hpp) match against.
// docs/protocol.md ("Tags") is the contract.
//
// Herald's event name is always the tag `event` as filters and Centrifugo
// clients see it; it lives in publication::event, never in these tags, so a
// publisher cannot give the same publication two event names.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace herald::net {

/// A publication's tags besides `event`: (key, value) pairs, keys distinct
/// and sorted (byte order), at most max_tags of them.
using publication_tags = std::vector<std::pair<std::string, std::string>>;

/// The most tags one publication carries besides `event`.
inline constexpr std::size_t max_tags = 32;
/// A tag key: 1 to this many bytes of UTF-8.
inline constexpr std::size_t max_tag_key_bytes = 64;
/// A tag value: 0 to this many bytes of UTF-8.
inline constexpr std::size_t max_tag_value_bytes = 256;

/// The name of the tag that holds Herald's event name.
inline constexpr std::string_view event_tag = "event";

/// What read_tags does with a key `event` in the object.
enum class event_tag_policy {
  refuse, ///< an error (POST /v1/publish: the event is the body's `event`)
  take    ///< it is the event name (Centrifugo's /api/publish: `tags.event`)
};

/// Reads a `tags` value from a client's JSON: an object of strings within
/// the bounds above (keys 1-64 bytes, values at most 256 bytes, at most 32
/// tags besides `event`). nlohmann's parser has checked that every string
/// is UTF-8. Never throws.
/// @param event receives `tags.event` under event_tag_policy::take (left
///        alone when there is none); its validity is the caller's to check.
/// @param detail a sentence for the client on error, naming the tag.
/// @returns false on a bad shape or bound, with `detail`.
bool read_tags(const nlohmann::json& value, event_tag_policy policy, publication_tags& out,
               std::string& event, std::string& detail);

/// `{"k":"v",...}` (compact JSON, keys in order), or "" when `tags` is empty:
/// the form ARGV[10] of the publish script and the Redis envelope carry.
std::string tags_json(const publication_tags& tags);

/// Appends the members of `tags` as JSON object members, `"k":"v"`
/// separated by commas (nothing when empty), escaped as JSON strings.
void append_tag_members(std::string& out, const publication_tags& tags);

/// The value of tag `key`, or nullptr. `key` "event" is not looked up here
/// (it is publication::event). Allocates nothing.
const std::string* find_tag(const publication_tags& tags, std::string_view key) noexcept;

} // namespace herald::net
