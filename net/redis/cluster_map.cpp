#include "net/redis/cluster_map.hpp"

#include <algorithm>

namespace herald::net::redis {

namespace {

bool parse_port(std::string_view text, std::uint16_t& out) {
  if (text.empty() || text.size() > 5)
    return false;
  unsigned value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value == 0 || value > 65535)
    return false;
  out = static_cast<std::uint16_t>(value);
  return true;
}

// "host:port", "[v6]:port" or "v6:port" (port after the last ':').
bool parse_host_port(std::string_view text, node_address& out) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0)
    return false;
  auto host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty())
    return false;
  node_address a;
  a.host = std::string(host);
  if (!parse_port(text.substr(colon + 1), a.port))
    return false;
  out = std::move(a);
  return true;
}

} // namespace

std::string node_address::to_string() const {
  if (host.find(':') != std::string::npos)
    return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

slot_map::slot_map()
  : owner_(slot_count, none) {}

std::size_t slot_map::index_of(const node_address& a) {
  auto it = std::find(nodes_.begin(), nodes_.end(), a);
  if (it != nodes_.end())
    return static_cast<std::size_t>(it - nodes_.begin());
  nodes_.push_back(a);
  return nodes_.size() - 1;
}

bool slot_map::parse_cluster_slots(const reply& r, const node_address& asked, slot_map& out,
                                   std::string& error) {
  if (r.is_error()) {
    error = "CLUSTER SLOTS: " + r.str;
    return false;
  }
  if (r.type != reply::array) {
    error = "CLUSTER SLOTS: not an array";
    return false;
  }
  slot_map m;
  for (const auto& e : r.elements) {
    // [start, end, [host, port, id, ...], replicas...]
    if (e.type != reply::array || e.elements.size() < 3 || e.elements[0].type != reply::integer ||
        e.elements[1].type != reply::integer || e.elements[2].type != reply::array ||
        e.elements[2].elements.size() < 2 || e.elements[2].elements[0].type != reply::string ||
        e.elements[2].elements[1].type != reply::integer) {
      error = "CLUSTER SLOTS: malformed entry " + e.to_string();
      return false;
    }
    auto first = e.elements[0].number;
    auto last = e.elements[1].number;
    auto port = e.elements[2].elements[1].number;
    if (first < 0 || last < first || last >= slot_count || port <= 0 || port > 65535) {
      error = "CLUSTER SLOTS: bad range or port in " + e.to_string();
      return false;
    }
    node_address master;
    master.host = e.elements[2].elements[0].str;
    if (master.host.empty())
      master.host = asked.host;
    if (master.host == "?") {
      error = "CLUSTER SLOTS: a master's address is unknown (\"?\")";
      return false;
    }
    master.port = static_cast<std::uint16_t>(port);
    auto index = static_cast<std::uint16_t>(m.index_of(master));
    std::fill(m.owner_.begin() + first, m.owner_.begin() + last + 1, index);
  }
  out = std::move(m);
  error.clear();
  return true;
}

const node_address* slot_map::master_for(std::uint16_t slot) const {
  if (slot >= slot_count || owner_[slot] == none)
    return nullptr;
  return &nodes_[owner_[slot]];
}

std::vector<node_address> slot_map::masters() const {
  std::vector<bool> seen(nodes_.size(), false);
  std::vector<node_address> out;
  for (auto o : owner_)
    if (o != none && !seen[o]) {
      seen[o] = true;
      out.push_back(nodes_[o]);
    }
  return out;
}

std::size_t slot_map::slots_of(const node_address& master) const {
  auto it = std::find(nodes_.begin(), nodes_.end(), master);
  if (it == nodes_.end())
    return 0;
  auto index = static_cast<std::uint16_t>(it - nodes_.begin());
  return static_cast<std::size_t>(std::count(owner_.begin(), owner_.end(), index));
}

bool slot_map::covers_all() const {
  return std::none_of(owner_.begin(), owner_.end(), [](auto o) { return o == none; });
}

void slot_map::assign(std::uint16_t slot, const node_address& master) {
  if (slot >= slot_count)
    return;
  owner_[slot] = static_cast<std::uint16_t>(index_of(master));
}

bool slot_map::same_as(const slot_map& other) const {
  for (std::size_t s = 0; s < slot_count; ++s) {
    auto a = master_for(static_cast<std::uint16_t>(s));
    auto b = other.master_for(static_cast<std::uint16_t>(s));
    if ((a == nullptr) != (b == nullptr) || (a != nullptr && *a != *b))
      return false;
  }
  return true;
}

bool parse_redirect(std::string_view text, redirect& out) {
  redirect r;
  if (text.substr(0, 6) == "MOVED ") {
    r.kind = redirect::moved;
    text.remove_prefix(6);
  } else if (text.substr(0, 4) == "ASK ") {
    r.kind = redirect::ask;
    text.remove_prefix(4);
  } else {
    return false;
  }
  auto space = text.find(' ');
  if (space == std::string_view::npos)
    return false;
  std::uint16_t slot = 0;
  auto slot_text = text.substr(0, space);
  if (slot_text == "0") {
    slot = 0;
  } else {
    // parse_port refuses 0 and values above 65535; slots stop at 16383.
    if (!parse_port(slot_text, slot) || slot >= slot_count)
      return false;
  }
  r.slot = slot;
  if (!parse_host_port(text.substr(space + 1), r.to))
    return false;
  out = std::move(r);
  return true;
}

} // namespace herald::net::redis
