// tags_filter: a subscriber's filter over publication tags (pure: no Asio,
// no clock). Parsed once when a subscription starts, then shared read-only
// (shared_ptr<const tags_filter>) by the subscription's entry in its
// session's table, which asks it about every publication it would deliver.
//
// The tree is Centrifugo's FilterNode (centrifugal/protocol client.proto;
// the `centrifuge` SDK's `tagsFilter`, sent as the subscribe's `tf`), in
// JSON: a leaf `{"key":"..","cmp":"eq|neq|in|nin|ex|nex|sw|ew|ct|lt|lte|gt|gte",
// "val":"..","vals":[..]}` or a node `{"op":"and|or|not","nodes":[...]}`.
// Semantics are those of Centrifugo's filter package: a leaf on a missing
// tag is false, except `neq`, `nin` and `nex`, which are true; `lt`, `lte`,
// `gt`, `gte` compare as decimal numbers (`-12.5`; a tag that is not one is
// false). Herald's event name is the tag `event`. docs/protocol.md
// ("Filters") and docs/centrifugo.md ("Tags filter") are the contract.
#pragma once

#include "net/wire/publication.hpp"
#include "net/wire/tags.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace herald::net {

class tags_filter;
using tags_filter_ptr = std::shared_ptr<const tags_filter>;

class tags_filter {
public:
  // -- limits ----------------------------------------------------------------
  /// Deepest nesting of `and`/`or`/`not` (a leaf alone is depth 1):
  /// evaluation recurses once per level.
  static constexpr std::size_t max_depth = 8;
  /// The most nodes (leaves and operators) in one tree.
  static constexpr std::size_t max_nodes = 64;
  /// The most strings in one leaf's `vals`, and in the whole tree.
  static constexpr std::size_t max_vals = 64;
  /// The longest `key` and each `val`/`vals` string, in bytes (as a tag's
  /// key and value are bounded: net/wire/tags.hpp).
  static constexpr std::size_t max_string_bytes = max_tag_value_bytes;

  /// Parses a FilterNode tree (JSON, as above). Unknown fields, a field of
  /// the wrong type, an unknown `op` or `cmp`, a leaf without `key`, `val`
  /// missing or empty for eq/neq/sw/ew/ct/lt/lte/gt/gte (as Centrifugo
  /// requires), `vals` missing or empty for in/nin, a `val` of lt/lte/gt/gte
  /// that is not a decimal number, `and`/`or` without nodes, `not` without
  /// exactly one node, or a tree over the limits above: nullptr and a
  /// sentence in `error` that says which node (a path such as
  /// `nodes[1].cmp`). Never throws.
  static tags_filter_ptr parse(const nlohmann::json& tree, std::string& error);

  /// The filter `event` is one of `events` (SSE `?event=`): `{"key":"event",
  /// "cmp":"in","vals":[...]}`. `events` non-empty, each a valid event name
  /// (the caller checked: net/wire/json_input.hpp is_valid_event_name).
  static tags_filter_ptr event_in(const std::vector<std::string>& events);

  /// Whether a publication with event name `event` and `tags` passes.
  /// Allocates nothing; reentrant (any thread).
  bool matches(std::string_view event, const publication_tags& tags) const noexcept;

  /// matches(p.event, p.tags).
  bool matches(const publication& p) const noexcept { return matches(p.event, p.tags); }

  /// The tree as compact JSON (fields in a fixed order), for logs and tests.
  std::string to_json() const;

private:
  enum class kind : std::uint8_t {
    op_and, op_or, op_not,
    eq, neq, in, nin, ex, nex, sw, ew, ct, lt, lte, gt, gte
  };
  /// A decimal number, normalised (no leading zeros, no trailing fraction
  /// zeros) as views into the string it was read from.
  struct decimal {
    bool negative = false;
    std::string_view integer;  ///< digits, no leading zeros ("" for 0)
    std::string_view fraction; ///< digits, no trailing zeros
  };
  struct node {
    kind k = kind::eq;
    bool event_key = false;    ///< key is "event": publication::event
    std::string key;
    std::string val;
    decimal number;            ///< lt..gte: `val` read as a number
    std::uint32_t first = 0;   ///< and/or/not: children in children_; in/nin: values in vals_
    std::uint32_t count = 0;
  };

  tags_filter() = default;
  bool eval(std::uint32_t index, std::string_view event, const publication_tags& tags) const noexcept;
  std::uint32_t read_node(const nlohmann::json& j, std::size_t depth, std::string path,
                          std::string& error);
  nlohmann::json node_json(std::uint32_t index) const;

  static bool read_decimal(std::string_view text, decimal& out) noexcept;
  static int compare(const decimal& a, const decimal& b) noexcept;

  std::vector<node> nodes_; ///< nodes_[0] is the root (after parse)
  std::vector<std::uint32_t> children_;
  std::vector<std::string> vals_;
  std::uint32_t root_ = 0;
};

} // namespace herald::net
