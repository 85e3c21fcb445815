#include "net/wire/channel_name.hpp"

#include "net/wire/errors.hpp"
#include "net/wire/strkey.hpp"

namespace herald::net {

namespace {

constexpr std::string_view stream_prefix = "stream:";
constexpr std::string_view user_prefix = "user:";

constexpr bool starts_with(std::string_view s, std::string_view prefix) noexcept {
  return s.substr(0, prefix.size()) == prefix;
}

constexpr bool is_stream_id_char(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

bool is_stream_id(std::string_view id) noexcept {
  if (id.empty() || id.size() > max_stream_id_length)
    return false;
  for (char c : id) {
    if (!is_stream_id_char(c))
      return false;
  }
  return true;
}

} // namespace

std::error_code validate_channel(std::string_view name) noexcept {
  if (starts_with(name, stream_prefix)) {
    if (is_stream_id(name.substr(stream_prefix.size())))
      return {};
  } else if (starts_with(name, user_prefix)) {
    if (is_account_id(name.substr(user_prefix.size())))
      return {};
  }
  return make_error_code(herald::errc::invalid_channel);
}

channel_kind kind_of(std::string_view valid_name) noexcept {
  return starts_with(valid_name, user_prefix) ? channel_kind::user : channel_kind::stream;
}

} // namespace herald::net
