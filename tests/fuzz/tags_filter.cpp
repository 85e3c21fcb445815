// Fuzz target: a subscriber's tags filter (net/wire/tags_filter.hpp) and a
// publisher's tags (net/wire/tags.hpp), as clients send them. The input is
// JSON: a filter tree, or `{"f":<tree>,"t":<tags>,"e":"<event>"}`. A tree
// is either refused with a reason or gives a filter whose JSON form parses
// back to the same filter; evaluation over the tags, the event and a few
// fixed tag sets must hold (a `not` of a filter answers the opposite).
#include "fuzz_check.hpp"

#include "net/wire/json_input.hpp"
#include "net/wire/tags.hpp"
#include "net/wire/tags_filter.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

using namespace herald::net;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text{reinterpret_cast<const char*>(data), size};
  nlohmann::json doc;
  if (!parse_client_json(text, doc))
    return 0;
  nlohmann::json tree = doc;
  publication_tags tags{{"amount", "12.50"}, {"asset", "USDC"}};
  std::string event = "withdrawn";
  if (doc.is_object() && doc.contains("f")) {
    tree = doc["f"];
    if (auto t = doc.find("t"); t != doc.end()) {
      std::string detail, ignored;
      publication_tags read;
      if (read_tags(*t, event_tag_policy::take, read, event, detail)) {
        FUZZ_CHECK(read.size() <= max_tags);
        FUZZ_CHECK(tags_json(read).empty() == read.empty());
        tags = std::move(read);
      } else {
        FUZZ_CHECK(!detail.empty());
      }
    }
    if (auto e = doc.find("e"); e != doc.end() && e->is_string())
      event = e->get<std::string>();
  }
  std::string error;
  auto f = tags_filter::parse(tree, error);
  FUZZ_CHECK((f == nullptr) == !error.empty());
  if (!f)
    return 0;
  // The filter's own JSON form reads back as the same filter.
  nlohmann::json again;
  FUZZ_CHECK(parse_client_json(f->to_json(), again));
  std::string error2;
  auto g = tags_filter::parse(again, error2);
  FUZZ_CHECK(g != nullptr);
  FUZZ_CHECK(g->to_json() == f->to_json());
  const bool m = f->matches(event, tags);
  FUZZ_CHECK(g->matches(event, tags) == m);
  // `not` of the tree answers the opposite, when one more level fits.
  auto negated = tags_filter::parse({{"op", "not"}, {"nodes", nlohmann::json::array({again})}}, error2);
  if (negated)
    FUZZ_CHECK(negated->matches(event, tags) != m);
  (void)f->matches({}, {});
  (void)f->matches(event, {{"", ""}, {"event", "x"}, {std::string(300, 'k'), "-0.0"}});
  return 0;
}
