// Reading JSON that comes from clients (publish bodies, WebSocket commands).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace herald::net {

/// Deepest nesting of arrays/objects accepted from a client. Encoding a
/// deeper value would recurse once per level, so the bound protects the stack.
inline constexpr std::size_t max_json_depth = 64;

/// Parses `text` as JSON (RFC 8259; strings must be valid UTF-8). Never throws.
/// An object that names a key twice is refused (RFC 8259 section 4 leaves
/// its meaning to the reader: a proxy or logger that keeps the first value
/// would read another document than Herald, which would keep the last).
/// @param error when given, receives why the text was refused: it starts
///        with nested_too_deep (then the bound), "duplicate key \"<key>\"",
///        "not valid JSON at byte <N>: " and the parser's reason (N
///        counts from 1; the reason may quote up to 200 bytes of input), or,
///        for a number beyond a double's range (no position known),
///        "not valid JSON: number overflow parsing '<the number>'" and why.
/// @returns false when the text is not JSON, nests deeper than `max_depth`,
///          or repeats a key in one object.
/// The first member of the object `doc` whose name is not in `known`, as the
/// message `unknown field "<name>" (known: <list>)`, the name cut at 64
/// bytes (then "..."); empty when every member is known (or `doc` is no
/// object). For client input whose every field means something: a typo
/// (`"verison"`, `"sinse"`) would otherwise drop what the field asks for.
/// Never throws.
std::string unknown_field(const nlohmann::json& doc, const std::string_view* known,
                          std::size_t known_count);

/// unknown_field on a list such as `{"op", "id"}`.
template <std::size_t N>
std::string unknown_field(const nlohmann::json& doc, const std::string_view (&known)[N]) {
  return unknown_field(doc, known, N);
}

/// The start of parse_client_json's error for too deep a nesting.
inline constexpr std::string_view nested_too_deep = "nested deeper than ";

bool parse_client_json(std::string_view text, nlohmann::json& out,
                       std::size_t max_depth = max_json_depth, std::string* error = nullptr);

/// Serialises a value as compact one-line JSON (control characters, CR and LF
/// escaped). Never throws.
std::string dump_compact(const nlohmann::json& value);

/// A publication's event name: 1-64 of [A-Za-z0-9_.:-], not starting with
/// the reserved prefix "herald.".
bool is_valid_event_name(std::string_view event) noexcept;

} // namespace herald::net
