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

channel_fault check_stream_id(std::string_view id) noexcept {
  if (id.empty() || id.size() > max_stream_id_length)
    return channel_fault::stream_id_length;
  for (char c : id) {
    if (!is_stream_id_char(c))
      return channel_fault::stream_id_char;
  }
  return channel_fault::none;
}

channel_fault from_account(account_fault f) noexcept {
  switch (f) {
  case account_fault::none:
    return channel_fault::none;
  case account_fault::muxed:
    return channel_fault::account_muxed;
  case account_fault::lower_case:
    return channel_fault::account_case;
  case account_fault::length:
    return channel_fault::account_length;
  case account_fault::alphabet:
    return channel_fault::account_alphabet;
  case account_fault::version:
    return channel_fault::account_version;
  case account_fault::checksum:
  case account_fault::non_canonical:
    break;
  }
  return channel_fault::account_checksum;
}

} // namespace

std::error_code validate_channel(std::string_view name) noexcept {
  if (check_channel(name) == channel_fault::none)
    return {};
  return make_error_code(herald::errc::invalid_channel);
}

channel_fault check_channel(std::string_view name) noexcept {
  if (starts_with(name, stream_prefix))
    return check_stream_id(name.substr(stream_prefix.size()));
  if (starts_with(name, user_prefix))
    return from_account(check_account_id(name.substr(user_prefix.size())));
  return channel_fault::prefix;
}

std::string_view describe(channel_fault fault) noexcept {
  switch (fault) {
  case channel_fault::none:
    return "";
  case channel_fault::prefix:
    return "a channel starts with \"stream:\" or \"user:\" (lower case)";
  case channel_fault::stream_id_length:
    return "the id after \"stream:\" must be 1-128 characters";
  case channel_fault::stream_id_char:
    return "the id after \"stream:\" allows only A-Z a-z 0-9 _ . -";
  case channel_fault::account_muxed:
    return "a muxed account (M...) is not accepted: use its G... account id";
  case channel_fault::account_case:
    return "the account id must be upper case (StrKey G...)";
  case channel_fault::account_length:
    return "the account id must be 56 characters (StrKey G...)";
  case channel_fault::account_alphabet:
    return "the account id allows only A-Z and 2-7 (StrKey base32)";
  case channel_fault::account_version:
    return "not an account id: a StrKey account id starts with G (never a secret seed S...)";
  case channel_fault::account_checksum:
    return "the account id's StrKey checksum does not match (a typo?)";
  }
  return "invalid channel name";
}

std::string channel_error_detail(std::string_view name, channel_fault fault,
                                 std::string_view where) {
  constexpr std::size_t shown = 140;
  std::string out{where};
  out += "invalid channel \"";
  out.append(name.substr(0, shown));
  if (name.size() > shown)
    out += "...";
  out += "\": ";
  out += describe(fault);
  return out;
}

channel_kind kind_of(std::string_view valid_name) noexcept {
  return starts_with(valid_name, user_prefix) ? channel_kind::user : channel_kind::stream;
}

} // namespace herald::net
