#include "net/wire/tags_filter.hpp"

#include "net/wire/json_input.hpp"

#include <algorithm>
#include <array>

namespace herald::net {

namespace {

using nlohmann::json;

// The comparison names of a leaf, in the order of tags_filter::kind from eq.
constexpr std::array<std::string_view, 13> cmp_names{"eq", "neq", "in", "nin", "ex", "nex", "sw",
                                                     "ew", "ct", "lt", "lte", "gt", "gte"};
constexpr std::array<std::string_view, 3> op_names{"and", "or", "not"};

bool is_string_field(const json& j, const char* name, std::string& out, std::string& error,
                     const std::string& path) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null())
    return true;
  if (!it->is_string()) {
    error = path + name + " must be a string";
    return false;
  }
  out = it->get<std::string>();
  if (out.size() > tags_filter::max_string_bytes) {
    error = path + name + " is longer than " + std::to_string(tags_filter::max_string_bytes) +
            " bytes";
    return false;
  }
  return true;
}

} // namespace

bool tags_filter::read_decimal(std::string_view text, decimal& out) noexcept {
  decimal d;
  std::size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) {
    d.negative = text[i] == '-';
    ++i;
  }
  const auto int_begin = i;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9')
    ++i;
  auto integer = text.substr(int_begin, i - int_begin);
  std::string_view fraction;
  if (i < text.size() && text[i] == '.') {
    ++i;
    const auto frac_begin = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9')
      ++i;
    fraction = text.substr(frac_begin, i - frac_begin);
    if (fraction.empty())
      return false; // "1." is not a number here
  }
  if (i != text.size() || (integer.empty() && fraction.empty()))
    return false;
  while (!integer.empty() && integer.front() == '0')
    integer.remove_prefix(1);
  while (!fraction.empty() && fraction.back() == '0')
    fraction.remove_suffix(1);
  if (integer.empty() && fraction.empty())
    d.negative = false; // -0 is 0
  d.integer = integer;
  d.fraction = fraction;
  out = d;
  return true;
}

int tags_filter::compare(const decimal& a, const decimal& b) noexcept {
  if (a.negative != b.negative)
    return a.negative ? -1 : 1;
  int mag = 0; // |a| against |b|
  if (a.integer.size() != b.integer.size())
    mag = a.integer.size() < b.integer.size() ? -1 : 1;
  else if (auto c = a.integer.compare(b.integer); c != 0)
    mag = c < 0 ? -1 : 1;
  else if (auto f = a.fraction.compare(b.fraction); f != 0)
    mag = f < 0 ? -1 : 1; // no trailing zeros: a prefix is the smaller number
  return a.negative ? -mag : mag;
}

std::uint32_t tags_filter::read_node(const json& j, std::size_t depth, std::string path,
                                     std::string& error) {
  constexpr auto fail = ~std::uint32_t{0};
  const std::string at = path.empty() ? std::string{} : path + ".";
  if (depth > max_depth) {
    error = "the filter nests deeper than " + std::to_string(max_depth) + " levels" +
            (path.empty() ? std::string{} : " at " + path);
    return fail;
  }
  if (!j.is_object()) {
    error = (path.empty() ? std::string{"the filter"} : path) + " must be an object";
    return fail;
  }
  if (nodes_.size() >= max_nodes) {
    error = "the filter has more than " + std::to_string(max_nodes) + " nodes";
    return fail;
  }
  for (const auto& [name, value] : j.items()) {
    if (name != "op" && name != "key" && name != "cmp" && name != "val" && name != "vals" &&
        name != "nodes") {
      error = at + name.substr(0, 32) +
              " is not a filter field (op, key, cmp, val, vals, nodes)";
      return fail;
    }
  }
  std::string op, key, cmp, val;
  if (!is_string_field(j, "op", op, error, at) || !is_string_field(j, "key", key, error, at) ||
      !is_string_field(j, "cmp", cmp, error, at) || !is_string_field(j, "val", val, error, at))
    return fail;
  const json* vals = nullptr;
  if (auto it = j.find("vals"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) {
      error = at + "vals must be an array of strings";
      return fail;
    }
    if (!it->empty())
      vals = &*it;
  }
  const json* kids = nullptr;
  if (auto it = j.find("nodes"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) {
      error = at + "nodes must be an array of filter nodes";
      return fail;
    }
    if (!it->empty())
      kids = &*it;
  }
  node n;
  if (!op.empty()) {
    auto o = std::find(op_names.begin(), op_names.end(), op);
    if (o == op_names.end()) {
      error = at + "op must be \"and\", \"or\" or \"not\" (or absent in a leaf), not \"" +
              op.substr(0, 32) + "\"";
      return fail;
    }
    n.k = static_cast<kind>(static_cast<std::uint8_t>(kind::op_and) + (o - op_names.begin()));
    if (!key.empty() || !cmp.empty() || !val.empty() || vals != nullptr) {
      error = at + "an \"" + op + "\" node takes only nodes (no key, cmp, val or vals)";
      return fail;
    }
    const std::size_t count = kids ? kids->size() : 0;
    if (n.k == kind::op_not ? count != 1 : count == 0) {
      error = at + (n.k == kind::op_not ? "a \"not\" node takes exactly one node"
                                        : "an \"" + op + "\" node takes at least one node");
      return fail;
    }
    const auto self = static_cast<std::uint32_t>(nodes_.size());
    nodes_.push_back(std::move(n));
    std::vector<std::uint32_t> mine;
    mine.reserve(std::min(count, max_nodes)); // a longer list fails at max_nodes anyway
    for (std::size_t i = 0; i < count; ++i) {
      auto c = read_node((*kids)[i], depth + 1, at + "nodes[" + std::to_string(i) + "]", error);
      if (c == fail)
        return fail;
      mine.push_back(c);
    }
    nodes_[self].first = static_cast<std::uint32_t>(children_.size());
    nodes_[self].count = static_cast<std::uint32_t>(mine.size());
    children_.insert(children_.end(), mine.begin(), mine.end());
    return self;
  }
  // A leaf.
  if (kids != nullptr) {
    error = at + "a leaf (no op) takes no nodes; give \"op\":\"and\"|\"or\"|\"not\"";
    return fail;
  }
  auto c = std::find(cmp_names.begin(), cmp_names.end(), cmp);
  if (c == cmp_names.end()) {
    error = at + "cmp must be one of eq, neq, in, nin, ex, nex, sw, ew, ct, lt, lte, gt, gte" +
            (cmp.empty() ? std::string{} : ", not \"" + cmp.substr(0, 32) + "\"");
    return fail;
  }
  n.k = static_cast<kind>(static_cast<std::uint8_t>(kind::eq) + (c - cmp_names.begin()));
  if (key.empty()) {
    error = at + "a leaf needs a non-empty key (the tag it compares)";
    return fail;
  }
  switch (n.k) {
  case kind::in:
  case kind::nin:
    if (vals == nullptr || !val.empty()) {
      error = at + "\"" + cmp + "\" takes a non-empty vals (and no val)";
      return fail;
    }
    if (vals_.size() + vals->size() > max_vals) {
      error = "the filter has more than " + std::to_string(max_vals) + " vals";
      return fail;
    }
    n.first = static_cast<std::uint32_t>(vals_.size());
    for (std::size_t i = 0; i < vals->size(); ++i) {
      const auto& v = (*vals)[i];
      if (!v.is_string() || v.get_ref<const std::string&>().size() > max_string_bytes) {
        error = at + "vals[" + std::to_string(i) + "] must be a string of at most " +
                std::to_string(max_string_bytes) + " bytes";
        return fail;
      }
      vals_.push_back(v.get<std::string>());
    }
    n.count = static_cast<std::uint32_t>(vals->size());
    break;
  case kind::ex:
  case kind::nex:
    if (!val.empty() || vals != nullptr) {
      error = at + "\"" + cmp + "\" takes no val or vals";
      return fail;
    }
    break;
  default:
    if (val.empty() || vals != nullptr) {
      error = at + "\"" + cmp + "\" takes a non-empty val (and no vals)";
      return fail;
    }
    if (n.k == kind::lt || n.k == kind::lte || n.k == kind::gt || n.k == kind::gte) {
      decimal d;
      if (!read_decimal(val, d)) {
        error = at + "\"" + cmp + "\" compares numbers: val must be a decimal number such as " +
                "\"-12.5\", not \"" + val.substr(0, 32) + "\"";
        return fail;
      }
    }
    break;
  }
  n.event_key = key == event_tag;
  n.key = std::move(key);
  n.val = std::move(val);
  nodes_.push_back(std::move(n));
  return static_cast<std::uint32_t>(nodes_.size() - 1);
}

tags_filter_ptr tags_filter::parse(const json& tree, std::string& error) {
  std::shared_ptr<tags_filter> f{new tags_filter};
  const auto root = f->read_node(tree, 1, {}, error);
  if (root == ~std::uint32_t{0})
    return nullptr;
  f->root_ = root;
  // The numbers view into each node's val: read them once nodes_ no longer moves.
  for (auto& n : f->nodes_)
    if (n.k == kind::lt || n.k == kind::lte || n.k == kind::gt || n.k == kind::gte)
      read_decimal(n.val, n.number);
  return f;
}

tags_filter_ptr tags_filter::event_in(const std::vector<std::string>& events) {
  std::shared_ptr<tags_filter> f{new tags_filter};
  node n;
  n.k = kind::in;
  n.key = std::string{event_tag};
  n.event_key = true;
  n.first = 0;
  n.count = static_cast<std::uint32_t>(events.size());
  f->vals_ = events;
  f->nodes_.push_back(std::move(n));
  return f;
}

bool tags_filter::matches(std::string_view event, const publication_tags& tags) const noexcept {
  return !nodes_.empty() && eval(root_, event, tags);
}

bool tags_filter::eval(std::uint32_t index, std::string_view event,
                       const publication_tags& tags) const noexcept {
  const node& n = nodes_[index];
  switch (n.k) {
  case kind::op_and:
    for (std::uint32_t i = 0; i < n.count; ++i)
      if (!eval(children_[n.first + i], event, tags))
        return false;
    return true;
  case kind::op_or:
    for (std::uint32_t i = 0; i < n.count; ++i)
      if (eval(children_[n.first + i], event, tags))
        return true;
    return false;
  case kind::op_not:
    return !eval(children_[n.first], event, tags);
  default:
    break;
  }
  std::string_view value;
  bool found = true;
  if (n.event_key) {
    value = event;
  } else if (const auto* v = find_tag(tags, n.key)) {
    value = *v;
  } else {
    found = false;
  }
  switch (n.k) {
  case kind::eq:
    return found && value == n.val;
  case kind::neq:
    return !found || value != n.val;
  case kind::in:
  case kind::nin: {
    bool in = false;
    if (found)
      for (std::uint32_t i = 0; i < n.count && !in; ++i)
        in = value == vals_[n.first + i];
    return n.k == kind::in ? in : !in;
  }
  case kind::ex:
    return found;
  case kind::nex:
    return !found;
  case kind::sw:
    return found && value.substr(0, n.val.size()) == n.val;
  case kind::ew:
    return found && value.size() >= n.val.size() &&
           value.substr(value.size() - n.val.size()) == n.val;
  case kind::ct:
    return found && value.find(n.val) != std::string_view::npos;
  case kind::lt:
  case kind::lte:
  case kind::gt:
  case kind::gte: {
    decimal d;
    if (!found || !read_decimal(value, d))
      return false;
    const int c = compare(d, n.number);
    return n.k == kind::lt ? c < 0 : n.k == kind::lte ? c <= 0 : n.k == kind::gt ? c > 0 : c >= 0;
  }
  default:
    return false;
  }
}

json tags_filter::node_json(std::uint32_t index) const {
  const node& n = nodes_[index];
  json j = json::object();
  const auto k = static_cast<std::uint8_t>(n.k);
  if (k <= static_cast<std::uint8_t>(kind::op_not)) {
    j["op"] = op_names[k];
    json kids = json::array();
    for (std::uint32_t i = 0; i < n.count; ++i)
      kids.push_back(node_json(children_[n.first + i]));
    j["nodes"] = std::move(kids);
    return j;
  }
  j["key"] = n.key;
  j["cmp"] = cmp_names[k - static_cast<std::uint8_t>(kind::eq)];
  if (!n.val.empty())
    j["val"] = n.val;
  if (n.k == kind::in || n.k == kind::nin) {
    json vs = json::array();
    for (std::uint32_t i = 0; i < n.count; ++i)
      vs.push_back(vals_[n.first + i]);
    j["vals"] = std::move(vs);
  }
  return j;
}

std::string tags_filter::to_json() const {
  return nodes_.empty() ? std::string{"null"} : dump_compact(node_json(root_));
}

} // namespace herald::net
