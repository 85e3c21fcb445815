#include "loadtest/channel_plan.hpp"

#include "net/wire/strkey.hpp"

#include <array>

namespace herald::loadtest {

namespace {
std::uint64_t splitmix64(std::uint64_t& x) noexcept {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
} // namespace

std::string account_id_for(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t state = seed * 0x100000001B3ull ^ (index + 1) * 0x9E3779B97F4A7C15ull;
  std::array<std::uint8_t, 32> key{};
  for (std::size_t i = 0; i < key.size(); i += 8) {
    auto v = splitmix64(state);
    for (std::size_t b = 0; b < 8; ++b)
      key[i + b] = static_cast<std::uint8_t>(v >> (8 * b));
  }
  return herald::net::encode_account_id(key);
}

int channel_plan::total() const noexcept {
  auto s = static_cast<int>(streams);
  return layout == channel_layout::streams_and_users ? 2 * s : s;
}

std::string channel_plan::name(int id) const {
  auto s = static_cast<int>(streams);
  if (id < s)
    return "stream:" + prefix + "-" + std::to_string(id);
  return "user:" + account_id_for(seed, static_cast<std::uint64_t>(id - s));
}

std::vector<std::string> channel_plan::names() const {
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(total()));
  for (int i = 0; i < total(); ++i)
    out.push_back(name(i));
  return out;
}

std::vector<int> channel_plan::channels_of_connection(std::uint64_t k) const {
  auto i = static_cast<int>(k % streams);
  if (layout == channel_layout::streams_and_users)
    return {i, static_cast<int>(streams) + i};
  return {i};
}

std::vector<int> channel_plan::channels_of_publication(std::uint64_t seq) const {
  auto i = static_cast<int>((seq - 1) % streams);
  if (layout == channel_layout::streams_and_users)
    return {i, static_cast<int>(streams) +
                 static_cast<int>((static_cast<std::uint32_t>(i) + 1) % streams)};
  return {i};
}

} // namespace herald::loadtest
