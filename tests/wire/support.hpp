// Shared by net/wire's suites: a publication built as a channel builds one
// (the fields the codecs read), and the checks of a parsed Centrifugo
// command that both of its encodings' suites make.
#pragma once

#include "net/wire/centrifugo/protocol.hpp"
#include "net/wire/publication.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace herald::test {

/// A publication with these fields and no encodings yet (a publication holds
/// once_flags: built in place, never copied).
inline std::shared_ptr<net::publication> make_pub(std::uint64_t offset,
                                                  std::string channel = "stream:42",
                                                  std::string epoch = "abc",
                                                  std::string event = "withdrawn",
                                                  std::string data = R"({"amount":"12.5"})") {
  auto p = std::make_shared<net::publication>();
  p->channel = std::move(channel);
  p->epoch = std::move(epoch);
  p->offset = offset;
  p->event = std::move(event);
  p->data = std::move(data);
  return p;
}

/// `c` is the subscribe to stream:1 recovering from e1, offset 7, with flag
/// bit 2 (reject an unrecovered position) that both encodings' tests send.
inline void check_recovering_subscribe(const net::centrifugo::command& c) {
  using namespace net::centrifugo;
  CHECK(c.kind == method::subscribe);
  CHECK(c.channel == "stream:1");
  CHECK(c.recover);
  CHECK(c.since.epoch == "e1");
  CHECK(c.since.offset == 7u);
  CHECK((c.flag & flag_reject_unrecovered) != 0);
}

} // namespace herald::test
