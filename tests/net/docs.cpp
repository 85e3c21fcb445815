// The tables of docs/protocol.md, docs/auth.md, docs/centrifugo.md and
// docs/metrics.md, read and compared with the server: the error table
// (net/wire/errors.cpp), the refusal texts of net/auth, the gap reasons the
// code writes, the Centrifugo codes, and the metric families the server's
// exposition holds (net/obs/metrics.cpp, rendered in each mode). Also every
// relative Markdown link of the tree. A change that makes the docs drift
// from the server fails here.
#include "net/wire/errors.hpp"

#include "net/wire/centrifugo/protocol.hpp"
#include "net/wire/sse/encoder.hpp"

#include "net/auth/gate.hpp"
#include "net/auth/jwt_verifier.hpp"
#include "net/auth/policy.hpp"
#include "net/obs/metrics.hpp"
#include "net/obs/metrics_redis.hpp"
#include "net/obs/status.hpp"
#include "net/core/session_options.hpp"

#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using herald::errc;
using herald::info;

namespace {

std::string read_source(const std::string& path) {
  std::ifstream in{std::string{HERALD_SOURCE_DIR} + "/" + path};
  INFO(path);
  REQUIRE(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The text of section `heading` ("## HTTP errors") up to the next heading of
// the same or a higher level.
std::string section(const std::string& doc, const std::string& heading) {
  auto b = doc.find("\n" + heading + "\n");
  INFO(heading);
  REQUIRE(b != std::string::npos);
  auto level = heading.substr(0, heading.find(' ') + 1);
  auto e = b + heading.size() + 2;
  for (;;) {
    e = doc.find("\n#", e);
    if (e == std::string::npos)
      break;
    auto hashes = doc.substr(e + 1, doc.find(' ', e + 1) - e);
    if (hashes.size() <= level.size())
      break;
    ++e;
  }
  return doc.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

// The rows of the first table in `text` (header and separator skipped), cells trimmed.
std::vector<std::vector<std::string>> table(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in{text};
  bool seen = false;
  int skip = 2;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("|", 0) != 0) {
      if (seen)
        break;
      continue;
    }
    seen = true;
    if (skip > 0) {
      --skip;
      continue;
    }
    std::vector<std::string> cells;
    std::size_t pos = 1;
    while (pos < line.size()) {
      auto next = line.find(" | ", pos);
      if (next == std::string::npos)
        next = line.rfind('|');
      auto cell = line.substr(pos, next - pos);
      auto b = cell.find_first_not_of(' ');
      auto e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
      if (next + 1 >= line.size())
        break;
      pos = next + 2;
    }
    rows.push_back(cells);
  }
  return rows;
}

std::string unquote(const std::string& cell) {
  return cell.size() >= 2 && cell.front() == '`' && cell.back() == '`'
           ? cell.substr(1, cell.size() - 2)
           : cell;
}

// Every `word` in backticks in `text`.
std::set<std::string> backticked(const std::string& text) {
  std::set<std::string> out;
  std::regex re{"`([a-z_]+)`"};
  for (std::sregex_iterator i{text.begin(), text.end(), re}, end; i != end; ++i)
    out.insert((*i)[1]);
  return out;
}

errc by_code(const std::string& code) {
  for (std::size_t i = 0; i < herald::errc_count; ++i)
    if (info(static_cast<errc>(i)).code == code)
      return static_cast<errc>(i);
  FAIL("no errc with code " << code);
  return errc::none;
}

// Codes only a WebSocket client or an SSE stream can get: never an HTTP status.
const std::set<std::string> not_http = {
  "none",           "unknown_op",       "invalid_since",      "already_subscribed",
  "not_subscribed", "unsupported_data", "slow_client",        "cancelled",
  "token_expired",  "rate_limited",     "too_many_subscribes"};

} // namespace

TEST_CASE("docs/protocol.md: the HTTP error table is the server's error table", "[docs]") {
  auto rows = table(section(read_source("docs/protocol.md"), "## HTTP errors"));
  REQUIRE(rows.size() > 10);
  std::set<std::string> documented;
  for (const auto& r : rows) {
    REQUIRE(r.size() == 3);
    auto code = unquote(r[1]);
    INFO(code);
    CHECK(std::to_string(info(by_code(code)).http_status) == r[0]);
    CHECK_FALSE(not_http.count(code));
    documented.insert(code);
  }
  for (std::size_t i = 0; i < herald::errc_count; ++i) {
    std::string code{info(static_cast<errc>(i)).code};
    INFO(code);
    CHECK((documented.count(code) || not_http.count(code)));
  }
}

TEST_CASE("docs/protocol.md: WebSocket errors and close codes", "[docs]") {
  auto doc = read_source("docs/protocol.md");
  auto ws = section(doc, "## Subscribe over WebSocket: `GET /v1/ws`");
  // The paragraph listing the errors that answer a command.
  auto b = ws.find("Errors that answer a command");
  REQUIRE(b != std::string::npos);
  auto paragraph = ws.substr(b, ws.find("\n\n", b) - b);
  std::set<std::string> listed;
  // Words in backticks that are not error codes: op names and field names.
  const std::set<std::string> words = {"connect",     "refresh",      "subscribe",
                                       "unsubscribe", "unsubscribed", "id",
                                       "channel",     "since",        "sub"};
  for (const auto& w : backticked(paragraph))
    if (!words.count(w))
      listed.insert(w);
  // Every error a WebSocket command can get (was: too_many_subscribes missing).
  const std::set<std::string> sent = {"invalid_json",    "invalid_request",   "unknown_op",
                                      "invalid_channel", "invalid_since",     "already_subscribed",
                                      "not_subscribed",  "too_many_channels", "unauthorized",
                                      "forbidden",       "rate_limited",      "too_many_subscribes",
                                      "cancelled",       "unavailable"};
  CHECK(listed == sent);
  for (const auto& code : listed)
    CHECK(info(by_code(code)).code == code);

  // Close codes: each code the server closes with is in the table, and each
  // row's code is one the error table (or RFC 6455 framing) uses.
  auto rows = table(section(doc, "### Close codes (RFC 6455 section 7.4.1)"));
  std::set<std::string> codes;
  for (const auto& r : rows)
    codes.insert(r[0]);
  for (auto e :
       {errc::unsupported_data, errc::payload_too_large, errc::shutting_down, errc::slow_client,
        errc::unauthorized, errc::token_expired, errc::rate_limited, errc::too_many_subscribes}) {
    INFO(info(e).code);
    CHECK(codes.count(std::to_string(info(e).close_code)));
  }
  // Framing errors (net/wire/ws/frame_codec), and 1001 when the connection's
  // actor ends (actors/connection_actor.cpp).
  std::set<std::string> used{"1002", "1007", "1001"};
  for (std::size_t i = 0; i < herald::errc_count; ++i)
    used.insert(std::to_string(info(static_cast<errc>(i)).close_code));
  for (const auto& c : codes) {
    INFO(c);
    CHECK(used.count(c));
  }
}

TEST_CASE("docs/protocol.md: every gap reason the code writes, on every transport", "[docs]") {
  auto rows = table(section(read_source("docs/protocol.md"), "## Gaps"));
  std::map<std::string, std::vector<std::string>> documented;
  for (const auto& r : rows) {
    REQUIRE(r.size() == 4);
    documented[unquote(r[0])] = r;
  }
  // The reasons in the code: recovery decisions (actors/channel_log.cpp),
  // live gaps (net/core/subscription_table.cpp) and the slow-client notice.
  std::set<std::string> in_code{"slow_client"};
  std::regex reason_re{R"re((?:reason = |gap\(e, )"([a-z_]+)")re"};
  for (auto file : {"actors/channel_log.cpp", "net/core/subscription_table.cpp"}) {
    auto text = read_source(file);
    for (std::sregex_iterator i{text.begin(), text.end(), reason_re}, end; i != end; ++i)
      in_code.insert((*i)[1]);
  }
  CHECK(in_code.size() == 5);
  std::set<std::string> doc_reasons;
  for (const auto& [k, v] : documented)
    doc_reasons.insert(k);
  CHECK(doc_reasons == in_code);
  // Live gaps reach both transports (was: SSE's missed_publications and
  // WebSocket's epoch_changed were not listed).
  for (auto live : {"missed_publications", "epoch_changed"}) {
    INFO(live);
    REQUIRE(documented.count(live));
    CHECK(documented[live][1].find("live") != std::string::npos);
    CHECK(documented[live][2].find("live `gap`") != std::string::npos);
  }
  // The table writes each gap through the connection's codec, and SSE's
  // codec writes it as a herald.gap event (the slow-client one at the close).
  auto subscription_table = read_source("net/core/subscription_table.cpp");
  CHECK(subscription_table.find("codec_->gap(e.channel, reason)") != std::string::npos);
  auto sse_codec = read_source("net/wire/sse/session_codec.cpp");
  CHECK(sse_codec.find("encode_gap(channel, reason)") != std::string::npos);
  CHECK(sse_codec.find("encode_gap({}, \"slow_client\")") != std::string::npos);
}

TEST_CASE("docs/protocol.md: the SSE channel envelope is the one the encoder writes",
          "[docs][sse]") {
  auto sse = section(read_source("docs/protocol.md"), "## Subscribe over SSE: `GET /v1/sse`");
  CHECK(sse.find("[&envelope=1]") != std::string::npos);
  // The documented example event, as the encoder writes it (indented as a
  // block of the list item).
  auto block = herald::net::sse::encode_enveloped_event("withdrawn", "user:GA7Q...",
                                                        R"({"amount":"10.0000000"})");
  std::string indented;
  std::istringstream lines{block};
  for (std::string line; std::getline(lines, line);)
    if (!line.empty())
      indented += "  " + line + "\n";
  CHECK(sse.find(indented) != std::string::npos);
  // The singular-parameter table names it (a second ?envelope= is refused).
  auto repeated = section(read_source("docs/protocol.md"), "## Repeated parameters");
  CHECK(repeated.find("`last_event_id`, `envelope`") != std::string::npos);
  // The README's SSE examples use it where a stream reads several channels.
  auto readme = read_source("README.md");
  CHECK(readme.find("/v1/sse?envelope=1&channel=stream:1001&channel=user:") != std::string::npos);
}

TEST_CASE("README: a shell block never runs herald in the foreground before other commands",
          "[docs]") {
  // Pasted whole, a block that starts `build/bin/herald` in the foreground
  // never reaches its next line (was: the Authentication block's TOKEN=).
  auto readme = read_source("README.md");
  std::size_t blocks = 0;
  for (std::size_t b = readme.find("```sh\n"); b != std::string::npos;
       b = readme.find("```sh\n", b + 1)) {
    auto e = readme.find("\n```", b + 6);
    REQUIRE(e != std::string::npos);
    ++blocks;
    std::istringstream in{readme.substr(b + 6, e - b - 6)};
    std::vector<std::string> commands;
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line[0] != '#')
        commands.push_back(line.substr(0, line.find(" #")));
    for (std::size_t i = 0; i + 1 < commands.size(); ++i) {
      auto c = commands[i];
      while (!c.empty() && c.back() == ' ')
        c.pop_back();
      if (c.rfind("build/bin/herald", 0) != 0 || c.back() == '\\')
        continue;
      INFO("README sh block " << blocks << ": " << commands[i]);
      CHECK(c.back() == '&');
    }
  }
  CHECK(blocks >= 3);
}

TEST_CASE("docs/auth.md: the refusal texts are the ones the server sends", "[docs]") {
  auto doc = read_source("docs/auth.md");
  auto b = doc.find("Refusal texts");
  REQUIRE(b != std::string::npos);
  std::set<std::string> documented;
  for (const auto& r : table(doc.substr(b)))
    documented.insert(unquote(r[0]));

  namespace auth = herald::net::auth;
  std::set<std::string> sent;
  for (int e = 1; e <= static_cast<int>(auth::last_token_error); ++e)
    sent.insert(std::string{auth::to_string(static_cast<auth::token_error>(e))});
  // The gate's own texts, produced by the gate.
  std::string error;
  auth::jwt_config jc;
  jc.key = std::string(32, 'k');
  auth::policy p;
  p.verifier = auth::jwt_verifier::create(jc, error);
  REQUIRE(p.verifier);
  p.api_key_digest = auth::digest_of("an-api-key-of-16-bytes");
  auto sse_basic = auth::check_sse(p, "Basic dXNlcg==", "", {"stream:1"}, 0);
  auto sse_none = auth::check_sse(p, "", "", {"stream:1"}, 0);
  auto publish_none = auth::check_publish(p, "");
  auto publish_bad = auth::check_publish(p, "Bearer wrong-key-0000000000");
  sent.insert(sse_basic.message);
  CHECK(sse_none.message == "a token is required for stream:1");
  sent.insert("a token is required for <channel>");
  sent.insert(publish_none.message);
  sent.insert(auth::check_channel_position(p, "").message);
  sent.insert(publish_bad.message);
  // The server API's own (was: a Bearer key told only "not accepted").
  sent.insert(auth::check_server_api(p, "", "").message);
  sent.insert(auth::check_server_api(p, "", "Bearer an-api-key-of-16-bytes").message);
  CHECK(auth::check_server_api(p, "wrong-key-0000000000", "").message == publish_bad.message);
  // Was: `no token` undocumented as WebSocket-only, and "Authorization must
  // be Bearer <token>" missing.
  CHECK(documented == sent);
}

TEST_CASE("docs/auth.md: the error code table matches the error table", "[docs]") {
  auto doc = read_source("docs/auth.md");
  for (const auto& r : table(section(doc, "## Error codes"))) {
    REQUIRE(r.size() == 3);
    auto v = unquote(r[1]);
    INFO(r[0] << " " << v);
    if (r[0] == "HTTP") {
      auto sp = v.find(' ');
      CHECK(std::to_string(info(by_code(v.substr(sp + 1))).http_status) == v.substr(0, sp));
    } else if (r[0] == "WS error") {
      CHECK(info(by_code(v)).code == v);
    } else if (r[0] == "WS close") {
      CHECK((v == std::to_string(info(errc::unauthorized).close_code) ||
             v == std::to_string(info(errc::token_expired).close_code)));
    }
  }
}

TEST_CASE("docs/centrifugo.md: the error and close code tables are the codec's",
          "[docs][centrifugo]") {
  namespace cf = herald::net::centrifugo;
  auto codes = section(read_source("docs/centrifugo.md"), "## Codes");
  auto errors = table(codes);
  CHECK(errors.size() >= 9u);
  for (const auto& r : errors) {
    INFO(r[0]);
    auto msg = cf::message_of(static_cast<cf::error_code>(std::stoul(r[0])));
    CHECK(r[1].find("`" + std::string{msg} + "`") != std::string::npos);
  }
  // 112's message is the reason the channel decided (was: the row named
  // only "unrecoverable position", which the server does not send then).
  std::set<std::string> failures;
  {
    auto channel = read_source("actors/channel_log.cpp");
    std::regex reason_re{R"re(r\.reason = "([a-z_]+)")re"};
    for (std::sregex_iterator i{channel.begin(), channel.end(), reason_re}, end; i != end; ++i)
      failures.insert((*i)[1]);
  }
  CHECK(failures.size() == 3u);
  bool row_112 = false;
  for (const auto& r : errors)
    if (r[0] == "112") {
      row_112 = true;
      for (const auto& f : failures) {
        INFO(f);
        CHECK(r[1].find("`" + f + "`") != std::string::npos);
      }
    }
  CHECK(row_112);
  // The /v1/ws codes named in the first column are codes /v1/ws closes with
  // (protocol.md's table; was: 4003 for a refresh with another sub, which
  // /v1/ws answers with an error and stays open).
  std::set<std::string> v1_closes;
  for (const auto& r :
       table(section(read_source("docs/protocol.md"), "### Close codes (RFC 6455 section 7.4.1)")))
    v1_closes.insert(r[0]);
  auto closes = table(codes.substr(codes.find("Server closes.")));
  CHECK(closes.size() >= 8u);
  std::regex number{"[0-9]{4}"};
  for (const auto& r : closes) {
    INFO(r[0] << " -> " << r[1]);
    {
      auto head = r[0].substr(0, r[0].find('`'));
      for (std::sregex_iterator i{head.begin(), head.end(), number}, end; i != end; ++i)
        CHECK(v1_closes.count(i->str()) == 1);
    }
    auto text = r[1].find('`') == std::string::npos
                  ? std::string{}
                  : r[1].substr(r[1].find('`') + 1, r[1].rfind('`') - r[1].find('`') - 1);
    if (auto w = text.find("<why>"); w != std::string::npos)
      text.replace(w, 5, "why");
    auto head = r[0].substr(0, r[0].find('`'));
    for (std::sregex_iterator i{head.begin(), head.end(), number}, end; i != end; ++i) {
      auto herald_code = static_cast<std::uint16_t>(std::stoul(i->str()));
      auto [code, reason] = cf::close_for(herald_code, "why");
      if (r[1] == "unchanged") {
        CHECK(code == herald_code);
      } else {
        CHECK(std::to_string(code) == r[1].substr(0, 4));
        CHECK(reason == text);
      }
    }
  }
}

namespace {

// The families of a Prometheus exposition: name -> type, from its `# TYPE` lines.
std::map<std::string, std::string> families(const std::string& exposition) {
  std::map<std::string, std::string> out;
  std::istringstream in{exposition};
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) != 0)
      continue;
    std::istringstream words{line.substr(7)};
    std::string name, type;
    words >> name >> type;
    out[name] = type;
  }
  return out;
}

std::set<std::string> names_of(const std::map<std::string, std::string>& m) {
  std::set<std::string> out;
  for (const auto& [k, v] : m)
    out.insert(k);
  return out;
}

std::string listed(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s)
    out += (out.empty() ? "" : ", ") + x;
  return out.empty() ? "(none)" : out;
}

} // namespace

TEST_CASE("docs/metrics.md: the figures the server exposes, each documented, and no other",
          "[docs][metrics]") {
  namespace metrics = herald::net::metrics;
  // The server's own exposition in its three modes: in-process, cluster mode
  // on one Redis, and on a Redis Cluster (per-node figures).
  const auto in_process = families(metrics::render());
  metrics::set_redis_up(true);
  const auto single_redis = families(metrics::render());
  metrics::redis_node node;
  node.node = "127.0.0.1:7000";
  node.connected = true;
  node.slots = 16384;
  metrics::set_redis_nodes({node});
  const auto redis_cluster = families(metrics::render());
  metrics::set_redis_nodes({});

  auto doc = read_source("docs/metrics.md");
  struct row {
    std::string type;
    std::string meaning;
  };
  std::map<std::string, row> documented;
  for (const auto& r : table(section(doc, "## Herald figures"))) {
    REQUIRE(r.size() == 4);
    documented[unquote(r[0])] = {r[1], r[3]};
  }
  for (const auto& r : table(section(doc, "## Process figures"))) {
    REQUIRE(r.size() == 3);
    documented[unquote(r[0])] = {r[1], r[2]};
  }
  std::set<std::string> in_doc;
  for (const auto& [name, r] : documented)
    in_doc.insert(name);
  // Both ways (was: herald_publish_idempotent_replays_total,
  // herald_redis_writable and herald_redis_write_failures_total missing).
  const auto exposed = names_of(redis_cluster);
  std::set<std::string> undocumented, not_exposed;
  std::set_difference(exposed.begin(), exposed.end(), in_doc.begin(), in_doc.end(),
                      std::inserter(undocumented, undocumented.end()));
  std::set_difference(in_doc.begin(), in_doc.end(), exposed.begin(), exposed.end(),
                      std::inserter(not_exposed, not_exposed.end()));
  INFO("exposed, not in docs/metrics.md: " << listed(undocumented));
  INFO("in docs/metrics.md, not exposed: " << listed(not_exposed));
  CHECK(undocumented.empty());
  CHECK(not_exposed.empty());
  // Each row's type, and the mode it says it needs.
  for (const auto& [name, r] : documented) {
    INFO(name << ": " << r.meaning.substr(0, 60));
    if (redis_cluster.count(name))
      CHECK(redis_cluster.at(name) == r.type);
    const bool cluster_only = r.meaning.rfind("Cluster mode only", 0) == 0;
    const bool redis_cluster_only = r.meaning.rfind("Redis Cluster only", 0) == 0;
    CHECK(in_process.count(name) == (cluster_only || redis_cluster_only ? 0u : 1u));
    CHECK(single_redis.count(name) == (redis_cluster_only ? 0u : 1u));
  }
}

namespace {

// GitHub's anchor of a heading: lower case, letters, digits, '-' and '_'
// kept, spaces made '-', everything else dropped.
std::string slug(const std::string& heading) {
  std::string out;
  for (unsigned char c : heading) {
    if (std::isalnum(c) || c == '-' || c == '_')
      out.push_back(static_cast<char>(std::tolower(c)));
    else if (c == ' ')
      out.push_back('-');
  }
  return out;
}

// The anchors of a Markdown file's headings (outside code fences), with
// GitHub's -1, -2 ... for repeated ones.
std::set<std::string> anchors(const std::string& text) {
  std::set<std::string> out;
  std::map<std::string, int> seen;
  std::istringstream in{text};
  bool fence = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0)
      fence = !fence;
    if (fence || line.empty() || line[0] != '#')
      continue;
    auto b = line.find_first_not_of('#');
    if (b == std::string::npos || line[b] != ' ')
      continue;
    auto s = slug(line.substr(b + 1));
    auto n = seen[s]++;
    out.insert(n == 0 ? s : s + "-" + std::to_string(n));
  }
  return out;
}

} // namespace

TEST_CASE("Markdown links between the repository's files point to files and headings that exist",
          "[docs][links]") {
  namespace fs = std::filesystem;
  const fs::path root{HERALD_SOURCE_DIR};
  std::vector<fs::path> docs;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    auto name = it->path().filename().string();
    if (it->is_directory() &&
        (name.rfind("build", 0) == 0 || name == "node_modules" || name.front() == '.')) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && it->path().extension() == ".md")
      docs.push_back(it->path());
  }
  REQUIRE(docs.size() > 10);
  std::regex link{R"(\]\(([^)\s]+)\))"};
  std::size_t checked = 0;
  for (const auto& file : docs) {
    auto text = read_source(fs::relative(file, root).string());
    std::string outside; // the text outside code fences
    {
      std::istringstream in{text};
      bool fence = false;
      for (std::string line; std::getline(in, line);) {
        if (line.rfind("```", 0) == 0)
          fence = !fence;
        else if (!fence)
          outside += line + "\n";
      }
    }
    for (std::sregex_iterator i{outside.begin(), outside.end(), link}, end; i != end; ++i) {
      std::string target = (*i)[1];
      if (target.find("://") != std::string::npos || target.rfind("mailto:", 0) == 0)
        continue;
      auto hash = target.find('#');
      auto path = target.substr(0, hash);
      auto anchor = hash == std::string::npos ? std::string{} : target.substr(hash + 1);
      auto dest = path.empty() ? file : (file.parent_path() / path).lexically_normal();
      INFO(fs::relative(file, root).string() << ": (" << target << ")");
      ++checked;
      CHECK(fs::exists(dest));
      if (anchor.empty() || !fs::exists(dest) || dest.extension() != ".md")
        continue;
      // Was: metrics.md linked protocol.md#errors, which is no heading.
      CHECK(anchors(read_source(fs::relative(dest, root).string())).count(anchor) == 1);
    }
  }
  CHECK(checked > 20);
}

// -- issue 39: docs that contradicted the program ------------------------------

TEST_CASE("docs/metrics.md: the HTTP error codes table is the code label of "
          "herald_http_errors_total",
          "[docs][metrics]") {
  // Was: the metric exposed codes (unknown_op, rate_limited, ...) in no doc table.
  const auto exposition = herald::net::metrics::render();
  std::set<std::string> exposed;
  std::regex re{R"re(herald_http_errors_total\{code="([a-z_]+)"\})re"};
  for (std::sregex_iterator i{exposition.begin(), exposition.end(), re}, end; i != end; ++i)
    exposed.insert((*i)[1]);
  REQUIRE(exposed.size() > 10);
  auto doc = read_source("docs/metrics.md");
  auto at = doc.find("HTTP error codes (`code` label of `herald_http_errors_total`");
  REQUIRE(at != std::string::npos);
  std::set<std::string> documented;
  for (const auto& r : table(doc.substr(at))) {
    REQUIRE(r.size() == 3);
    auto code = unquote(r[0]);
    INFO(code);
    documented.insert(code);
    if (not_http.count(code)) {
      CHECK(r[1] == "none");
    } else {
      CHECK(r[1] == std::to_string(info(by_code(code)).http_status));
    }
  }
  CHECK(documented == exposed);
}

TEST_CASE("GET /v1/info lists the routes docs/protocol.md documents, and no other",
          "[docs]") {
  // Was: OPTIONS /v1/sse (protocol.md "Other routes") missing from /v1/info.
  auto info_doc = nlohmann::json::parse(std::string{herald::net::obs::info_json});
  std::set<std::string> served;
  for (const auto& r : info_doc.at("routes"))
    served.insert(r.get<std::string>());
  auto doc = read_source("docs/protocol.md");
  std::set<std::string> documented;
  // The section headings' `METHOD /path`, and the "Other routes" table, where
  // "`POST /api/publish`, `/api/broadcast`" carries the method on.
  std::regex heading{R"re(\n## [^\n]*`((GET|POST|OPTIONS) /[^`]*)`)re"};
  for (std::sregex_iterator i{doc.begin(), doc.end(), heading}, end; i != end; ++i)
    documented.insert((*i)[1]);
  std::regex cell{R"re(`((GET|POST|OPTIONS) )?(/[^`]*)`)re"};
  for (const auto& r : table(section(doc, "## Other routes"))) {
    std::string method;
    for (std::sregex_iterator i{r[0].begin(), r[0].end(), cell}, end; i != end; ++i) {
      if ((*i)[2].matched)
        method = (*i)[2];
      documented.insert(method + " " + std::string((*i)[3]));
    }
  }
  INFO("served: " << listed(served));
  INFO("documented: " << listed(documented));
  CHECK(served == documented);
}

TEST_CASE("docs: compression, history per class, Protobuf data, close reasons as the program has "
          "them",
          "[docs]") {
  auto protocol = read_source("docs/protocol.md");
  auto limits = section(protocol, "## Limits");
  // Was: "Herald does not negotiate permessage-deflate ... RSV1 ... 1002 ...
  // Beast's read_message_max".
  CHECK(herald::net::session_options{}.ws_deflate_min_bytes > 0); // negotiated by default
  CHECK(limits.find("does not negotiate") == std::string::npos);
  CHECK(limits.find("read_message_max") == std::string::npos);
  CHECK(limits.find("`--ws-deflate-min-bytes=0`") != std::string::npos);
  CHECK(limits.find("**inflated** size") != std::string::npos);
  auto centrifugo = read_source("docs/centrifugo.md");
  // Was: "history is `--history-size` / `--history-ttl` for every channel".
  CHECK(centrifugo.find("history is `--history-size` / `--history-ttl` for every") ==
        std::string::npos);
  CHECK(centrifugo.find("history is set per **channel class**") != std::string::npos);
  // Was: "a channel needs `--history-size` of at least 2 for deltas".
  CHECK(centrifugo.find("of at least 2 for deltas") == std::string::npos);
  // Was: only `ctx.data` logged as JSON; the Protobuf build gives a Uint8Array.
  CHECK(centrifugo.find("JSON.parse(text.decode(ctx.data))") != std::string::npos);
  // Was: "Centrifugo fields ... ignored otherwise"; unknown fields are refused.
  CHECK(centrifugo.find("**Any other field is refused**") != std::string::npos);
  CHECK(protocol.find("**Any other field is refused**") != std::string::npos);
  // Was: `policy` "(limits, bad input)" while bad input closes (3501 bad
  // request) are counted as protocol_error.
  auto metrics_doc = read_source("docs/metrics.md");
  CHECK(metrics_doc.find("(limits, bad input)") == std::string::npos);
  auto reasons = metrics_doc.substr(metrics_doc.find("Disconnect reasons"));
  auto proto_row = reasons.substr(reasons.find("| `protocol_error` |"));
  proto_row = proto_row.substr(0, proto_row.find('\n'));
  CHECK(proto_row.find("3501") != std::string::npos);
}
