// Fuzz target: channel names and Stellar account ids (SEP-23 StrKey), as a
// client writes them in ?channel=, a WebSocket subscribe or a publish body.
#include "fuzz_check.hpp"

#include "net/wire/channel_name.hpp"
#include "net/wire/sse/cursor.hpp"
#include "net/wire/strkey.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

using namespace herald::net;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text{reinterpret_cast<const char*>(data), size};
  bool valid = !validate_channel(text);
  if (valid) {
    auto k = kind_of(text);
    if (k == channel_kind::user)
      FUZZ_CHECK(is_account_id(text.substr(5)));
    else
      FUZZ_CHECK(text.substr(0, 7) == "stream:" && text.size() > 7 && text.size() <= 7 + 128);
  }
  // The fault agrees with validity, and a fault has words (issue 39).
  const auto fault = check_channel(text);
  FUZZ_CHECK((fault == channel_fault::none) == valid);
  if (!valid) {
    FUZZ_CHECK(!describe(fault).empty());
    FUZZ_CHECK(channel_error_detail(text, fault).size() <= 140 + 200);
  }
  FUZZ_CHECK((check_account_id(text) == account_fault::none) == is_account_id(text));
  (void)sse::channel_hash(text);
  // An account id is valid exactly when "user:" + it is a valid channel.
  bool account = is_account_id(text);
  FUZZ_CHECK(account == !validate_channel("user:" + std::string{text}));
  if (account)
    FUZZ_CHECK(text.size() == 56 && text[0] == 'G');
  return 0;
}
