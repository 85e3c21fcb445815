// The tree's layering (issue #13, docs/architecture.md, net/README.md): reads
// every C++ source and CMakeLists.txt of the libraries and checks
//  - no include cycle between files, anywhere in the project;
//  - each library folder includes only from the folders its layer may use
//    (the table below; net/README.md draws it), and every folder holding
//    sources is in the table (a new folder must say its layer);
//  - no CAF anywhere in net/, and nothing but the standard library and
//    nlohmann/json in net/wire;
//  - each library's CMakeLists.txt (and loadtest's) links only herald::
//    targets of the folders its layer may use;
//  - no code outside net/wire compares or switches on the WebSocket dialect
//    (the codecs do; the upgrade chooses it once);
//  - net/core's table and session body never name a transport, and the
//    actors and app/ never build a transport's notices or last bytes (the
//    codecs do);
//  - nothing between the actors and the client parses JSON Herald wrote
//    (outcomes travel as values).
// The sources are read from HERALD_SOURCE_DIR; nothing is compiled.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path root{HERALD_SOURCE_DIR};

// Library folder -> the folders it may include from (itself included).
// "net" is net/'s own files (the seams); "net/asio.hpp" alone may be named.
const std::map<std::string, std::set<std::string>>& rules() {
  static const std::map<std::string, std::set<std::string>> table = [] {
    std::map<std::string, std::set<std::string>> t;
    t["net/wire"] = {"net/wire"};
    t["net/obs"] = {"net/obs", "net/wire"};
    t["net/auth"] = {"net/auth", "net/wire"};
    t["net"] = {"net", "net/wire", "net/auth"};
    t["net/core"] = {"net/core", "net", "net/obs", "net/wire", "net/auth"};
    t["net/sse"] = {"net/sse", "net/core", "net", "net/obs", "net/wire", "net/auth"};
    t["net/ws"] = {"net/ws", "net/core", "net", "net/obs", "net/wire", "net/auth"};
    t["net/http"] = {"net/http", "net/sse", "net/ws",   "net/core",
                     "net",      "net/obs", "net/wire", "net/auth"};
    t["net/redis"] = {"net/redis", "net/wire", "net/obs", "net/asio.hpp"};
    t["actors"] = {"actors",   "net/redis", "net/http", "net/sse",  "net/ws",
                   "net/core", "net",       "net/obs",  "net/wire", "net/auth"};
    t["app"] = t["actors"];
    t["app"].insert("app");
    t["loadtest"] = {"loadtest", "net/wire"};
    return t;
  }();
  return table;
}

// The herald:: CMake target that is each library folder.
const std::map<std::string, std::string> target_folder = {
  {"herald::wire", "net/wire"}, {"herald::obs", "net/obs"},   {"herald::auth", "net/auth"},
  {"herald::net", "net"},       {"herald::core", "net/core"}, {"herald::sse", "net/sse"},
  {"herald::ws", "net/ws"},     {"herald::http", "net/http"}, {"herald::redis", "net/redis"},
  {"herald::actors", "actors"}, {"herald::app", "app"},
};

bool is_source(const fs::path& p) {
  auto e = p.extension().string();
  return e == ".hpp" || e == ".cpp" || e == ".in";
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string rel(const fs::path& p) {
  return fs::relative(p, root).generic_string();
}

// The folder of a repository path ("net/wire/sse/cursor.hpp" -> "net/wire"):
// the deepest library folder of the table that holds it.
std::string library_of(const std::string& path) {
  std::string best;
  for (const auto& [folder, allowed] : rules()) {
    (void)allowed;
    if (path.rfind(folder + "/", 0) == 0 && folder.size() > best.size())
      best = folder;
  }
  // net/'s own files are "net" only when directly in net/.
  if (best == "net" && path.find('/', 4) != std::string::npos)
    return "?" + path.substr(0, path.find('/', 4));
  return best;
}

struct tree {
  std::set<std::string> files;                           // repository paths of sources
  std::map<std::string, std::vector<std::string>> edges; // file -> included project files
};

// Every project source under the library folders and tests/, with its
// "..." includes resolved against the root, then its own folder; a
// configured header (foo.hpp from foo.hpp.in) counts as its template.
const tree& project() {
  static const tree t = [] {
    tree out;
    for (const char* top : {"net", "actors", "app", "loadtest", "tests"})
      for (auto it = fs::recursive_directory_iterator(root / top);
           it != fs::recursive_directory_iterator(); ++it) {
        if (it->is_directory() && it->path().filename() == "node_modules") {
          it.disable_recursion_pending();
          continue;
        }
        if (it->is_regular_file() && is_source(it->path()))
          out.files.insert(rel(it->path()));
      }
    static const std::regex include(R"re(^\s*#\s*include\s*"([^"]+)")re");
    for (const auto& f : out.files) {
      std::istringstream lines(read(root / f));
      std::string line;
      std::smatch m;
      while (std::getline(lines, line)) {
        if (!std::regex_search(line, m, include))
          continue;
        std::string name = m[1];
        std::string dir = fs::path(f).parent_path().generic_string();
        for (const auto& candidate :
             {name, name + ".in", dir + "/" + name, dir + "/" + name + ".in"}) {
          auto norm = fs::path(candidate).lexically_normal().generic_string();
          if (out.files.count(norm)) {
            out.edges[f].push_back(norm);
            break;
          }
        }
      }
    }
    return out;
  }();
  return t;
}

// Every line of the project's files that `in_scope` picks where `matches`
// holds, as "file:line: text".
std::vector<std::string>
lines_where(const std::function<bool(const std::string& file)>& in_scope,
            const std::function<bool(const std::string& file, const std::string& line)>& matches) {
  std::vector<std::string> found;
  for (const auto& f : project().files) {
    if (!in_scope(f))
      continue;
    std::istringstream lines(read(root / f));
    std::string line;
    int n = 0;
    while (std::getline(lines, line)) {
      ++n;
      if (matches(f, line))
        found.push_back(f + ":" + std::to_string(n) + ": " + line);
    }
  }
  return found;
}

void check_none(const std::vector<std::string>& wrong) {
  for (const auto& w : wrong)
    UNSCOPED_INFO(w);
  CHECK(wrong.empty());
}

} // namespace

TEST_CASE("layout: no include cycle between project files", "[layout]") {
  const auto& t = project();
  REQUIRE(t.files.size() > 100);    // the tree was found
  std::map<std::string, int> state; // 0 new, 1 on the stack, 2 done
  std::vector<std::string> stack;
  std::vector<std::string> cycles;
  std::function<void(const std::string&)> visit = [&](const std::string& f) {
    state[f] = 1;
    stack.push_back(f);
    auto it = t.edges.find(f);
    if (it != t.edges.end())
      for (const auto& g : it->second) {
        if (state[g] == 1) {
          auto from = std::find(stack.begin(), stack.end(), g);
          std::string c;
          for (auto s = from; s != stack.end(); ++s)
            c += *s + " -> ";
          cycles.push_back(c + g);
        } else if (state[g] == 0) {
          visit(g);
        }
      }
    stack.pop_back();
    state[f] = 2;
  };
  for (const auto& f : t.files)
    if (state[f] == 0)
      visit(f);
  for (const auto& c : cycles)
    UNSCOPED_INFO("include cycle: " << c);
  CHECK(cycles.empty());
}

TEST_CASE("layout: each library includes only from the layers below it", "[layout]") {
  const auto& t = project();
  std::vector<std::string> wrong;
  std::set<std::string> unknown;
  for (const auto& f : t.files) {
    if (f.rfind("tests/", 0) == 0 || f.rfind("loadtest/tests/", 0) == 0)
      continue; // a test includes what it tests
    auto lib = library_of(f);
    if (lib.empty() || lib[0] == '?') {
      unknown.insert(lib.empty() ? f : lib.substr(1));
      continue;
    }
    const auto& allowed = rules().at(lib);
    auto it = t.edges.find(f);
    if (it == t.edges.end())
      continue;
    for (const auto& g : it->second) {
      auto to = library_of(g);
      if (allowed.count(to) || allowed.count(g))
        continue;
      wrong.push_back(f + " (" + lib + ") includes " + g + " (" + to + ")");
    }
  }
  for (const auto& w : wrong)
    UNSCOPED_INFO(w);
  CHECK(wrong.empty());
  for (const auto& u : unknown)
    UNSCOPED_INFO("not in the layer table of tests/layout/layout.cpp: " << u);
  CHECK(unknown.empty());
}

TEST_CASE("layout: no two folders of the layer table may use each other", "[layout]") {
  // A folder may use a folder only when that one does not use it back.
  for (const auto& [lib, allowed] : rules())
    for (const auto& other : allowed) {
      if (other == lib || !rules().count(other))
        continue;
      INFO(lib << " uses " << other);
      CHECK(rules().at(other).count(lib) == 0);
    }
}

TEST_CASE("layout: each library's CMake target links only its layer's targets", "[layout]") {
  static const std::regex target(R"(herald::[a-z_]+)");
  std::vector<std::string> wrong;
  std::size_t checked = 0;
  // (folder, its target's name): every library, and loadtest's.
  std::vector<std::pair<std::string, std::string>> targets;
  for (const auto& [name, folder] : target_folder)
    targets.emplace_back(folder, "herald_" + name.substr(8));
  targets.emplace_back("loadtest", "herald_loadtest_lib");
  for (const auto& [folder, own] : targets) {
    auto file = root / folder / "CMakeLists.txt";
    REQUIRE(fs::exists(file));
    // Only the target_link_libraries() calls of this folder's own target.
    auto text = read(file);
    std::regex call("target_link_libraries\\(" + own + "\\b([^)]*)\\)");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), call);
         it != std::sregex_iterator(); ++it) {
      auto args = (*it)[1].str();
      for (auto l = std::sregex_iterator(args.begin(), args.end(), target);
           l != std::sregex_iterator(); ++l) {
        ++checked;
        auto linked = target_folder.find(l->str());
        if (linked == target_folder.end())
          continue; // herald::caf and the like: not a layer
        if (!rules().at(folder).count(linked->second))
          wrong.push_back(folder + " links " + l->str());
      }
    }
  }
  CHECK(checked > 10);
  for (const auto& w : wrong)
    UNSCOPED_INFO(w);
  CHECK(wrong.empty());
}

TEST_CASE("layout: only the codecs branch on the WebSocket dialect", "[layout]") {
  // The dialect is chosen once, at the upgrade (net/ws/ws_session.cpp: the
  // subprotocol or ?format=protobuf picks Centrifugo's encoding); after that
  // sessions, the subscription table and the actors write through the
  // dialect's codec (net/wire/ws/session_codec.hpp, net/wire/centrifugo/codec.hpp)
  // and never compare or switch on it.
  static const std::regex branch(
    R"re(dialect\s*[!=]=|[!=]=\s*(net::)?(ws::)?dialect::|switch\s*\([^)]*dialect)re");
  const std::set<std::string> chooses = {"net/ws/ws_session.cpp"};
  check_none(lines_where(
    [&](const std::string& f) { return f.rfind("net/wire/", 0) != 0 && chooses.count(f) == 0; },
    [](const std::string&, const std::string& line) { return std::regex_search(line, branch); }));
}

TEST_CASE("layout: what a client reads comes from its codec and never from a transport branch",
          "[layout]") {
  // The subscription table and the session body both transports share
  // (net/core) write through the connection's codec (net/wire/session_codec.hpp)
  // and never name a transport; the actors and the service say why a client
  // closes (a code and a reason) and never build a transport's last bytes.
  static const std::regex names_transport(R"re(transport::(sse|ws)\b)re");
  static const std::regex builds_sse(R"re(sse::encode_(gap|token_expired|shutdown|cursor)|final_frame)re");
  auto core = [](const std::string& f) {
    return f.rfind("net/core/subscription_table.", 0) == 0 ||
           f.rfind("net/core/stream_session.", 0) == 0;
  };
  auto control = [](const std::string& f) {
    return f.rfind("actors/", 0) == 0 || f.rfind("app/", 0) == 0;
  };
  check_none(lines_where([&](const std::string& f) { return core(f) || control(f); },
                         [&](const std::string& f, const std::string& line) {
                           return (core(f) && std::regex_search(line, names_transport)) ||
                                  (control(f) && std::regex_search(line, builds_sse));
                         }));
}

TEST_CASE("layout: outcomes travel as values and no answer is parsed back from its text",
          "[layout]") {
  // A publish's outcome reaches the HTTP layer as net::publish_outcome and
  // each route encodes it once (issue #23): nothing between the actors and
  // the client parses JSON that Herald itself wrote. What parses JSON does so
  // at a boundary: net/wire (client input), net/redis (envelopes from other
  // instances), net/auth (tokens), net/obs (the status page's own input).
  static const std::regex parses(R"re(json::parse\(|parse_client_json\()re");
  const std::vector<std::string> layers = {"actors/", "app/", "net/http/", "net/core/",
                                           "net/ws/", "net/sse/"};
  check_none(lines_where(
    [&](const std::string& f) {
      return std::any_of(layers.begin(), layers.end(),
                         [&](const std::string& l) { return f.rfind(l, 0) == 0; });
    },
    [](const std::string&, const std::string& line) { return std::regex_search(line, parses); }));
}

TEST_CASE("layout: no CAF in net/, only the standard library and nlohmann/json in net/wire",
          "[layout]") {
  static const std::regex system_include(R"re(^\s*#\s*include\s*<([^>]+)>)re");
  std::vector<std::string> wrong;
  for (const auto& f : project().files) {
    if (f.rfind("net/", 0) != 0)
      continue;
    bool wire = f.rfind("net/wire/", 0) == 0;
    std::istringstream lines(read(root / f));
    std::string line;
    std::smatch m;
    while (std::getline(lines, line)) {
      if (!std::regex_search(line, m, system_include))
        continue;
      std::string h = m[1];
      bool caf = h.rfind("caf/", 0) == 0;
      // The standard library's headers have no '/' and no ".h"; nlohmann/json is allowed.
      bool foreign = h.find('/') != std::string::npos || h.find(".h") != std::string::npos;
      if (caf || (wire && foreign && h.rfind("nlohmann/", 0) != 0))
        wrong.push_back(f + " includes <" + h + ">");
    }
  }
  for (const auto& w : wrong)
    UNSCOPED_INFO(w);
  CHECK(wrong.empty());
}
