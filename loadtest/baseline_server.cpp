// herald-baseline: the machine's limit to compare Herald against, with the
// same client (herald-loadtest) and the subset of the protocol it uses. A
// single-threaded epoll loop, deliberately minimal (a yardstick, not a
// product: no auth, no history, no limits, no timers):
//   - a GET without "Upgrade: websocket" gets a fixed "200 text/event-stream"
//     head and the socket becomes an SSE subscriber (the path, channels and
//     cursors are ignored);
//   - a GET with "Upgrade: websocket" gets the RFC 6455 handshake
//     (Sec-WebSocket-Accept = base64(SHA-1(key + GUID)), OpenSSL's libcrypto)
//     and the socket becomes a WebSocket subscriber. Client frames are
//     unmasked and decoded (fragmented messages reassembled, at most 64 KiB);
//     each text message is one JSON command, scanned (not parsed) for "op",
//     "id" (echoed as given) and "channel":
//       subscribe   -> {"op":"subscribed","id":..,"channel":..,"epoch":"baseline",
//                       "offset":<the channel's latest offset>,"recovered":false}
//       unsubscribe -> {"op":"unsubscribed",...} (the socket still gets everything)
//       ping        -> {"op":"pong",...};  connect -> {"op":"connected",...}
//       other       -> {"op":"error","code":"unknown_op",...}
//     A ping frame is answered with a pong carrying its payload, a close frame
//     with a close echoing its code, then the socket is closed. Protocol
//     errors close with 1002 (unmasked frame, reserved bits, bad control or
//     continuation frame), 1003 (binary message) or 1009 (message > 64 KiB).
//     A WebSocket subscriber gets every publication whatever it subscribed to;
//   - POST /v1/publish builds the publication once per transport: the SSE
//     frame "data: <body>\n\n", and (only when there are WebSocket
//     subscribers) one unmasked text frame
//       {"op":"publication","channel":"<first channel of the request>",
//        "offset":N,"event":"<event>","data":<data, copied verbatim>}
//     where N counts 1, 2, 3... per channel (every channel of the request
//     advances; the frame names the first one, so the WebSocket side is for
//     single-channel scenarios: idle, fanout, find-max). Each frame is written
//     to every subscriber of its transport with one write() per socket, then
//     the publisher gets 200 {"offsets":{}} (keep-alive): the empty offsets
//     tell herald-loadtest that every connection gets every publication.
// Write policy (both transports): a subscriber whose socket cannot take the
// whole frame in that one write() (partial write, EAGAIN or error) is closed
// at once, without a close frame; nothing is ever queued.
// Usage: herald-baseline [port (0: any)] [host (127.0.0.1)]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {
enum kind : std::uint8_t { http, sse, ws };
struct conn {
  std::string in;          // unparsed request bytes (http), or an incomplete client frame (ws)
  std::uint32_t index = 0; // position in subscribers[k]
  kind k = http;
};
std::unordered_map<int, conn> conns;
std::vector<int> subscribers[3];                // by kind: [sse], [ws]
std::unordered_map<int, std::string> fragments; // ws: a fragmented message being reassembled
std::unordered_map<std::string, std::uint64_t>
  offsets; // channel (as written in the request) -> latest offset
constexpr std::size_t max_ws_message = 64 * 1024;

void drop(int fd) {
  auto it = conns.find(fd);
  if (it == conns.end())
    return;
  if (it->second.k != http) {
    auto& list = subscribers[it->second.k];
    int last = list.back();
    list[it->second.index] = last; // swap with the back: callers iterate backwards
    conns[last].index = it->second.index;
    list.pop_back();
  }
  if (it->second.k == ws)
    fragments.erase(fd);
  conns.erase(it);
  close(fd); // closing removes it from the epoll set too
}

// One write(); the socket is closed unless it took everything. True if kept.
bool send_all(int fd, std::string_view s) {
  if (write(fd, s.data(), s.size()) == static_cast<ssize_t>(s.size()))
    return true;
  drop(fd);
  return false;
}

void make_subscriber(int fd, conn& c, kind k) {
  c.k = k;
  c.index = static_cast<std::uint32_t>(subscribers[k].size());
  subscribers[k].push_back(fd);
}

// --- scanning, just enough for herald-loadtest's requests --------------------

bool ieq(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if ((a[i] | 0x20) != (b[i] | 0x20))
      return false;
  return true;
}

// The trimmed value of header `name` in a request head, or "".
std::string_view header(std::string_view head, std::string_view name) {
  for (std::size_t pos = head.find("\r\n");
       pos != std::string_view::npos && pos + 2 < head.size();) {
    std::size_t start = pos + 2, eol = head.find("\r\n", start);
    std::string_view line = head.substr(start, eol == std::string_view::npos ? eol : eol - start);
    if (auto colon = line.find(':');
        colon != std::string_view::npos && ieq(line.substr(0, colon), name)) {
      auto v = line.substr(colon + 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t'))
        v.remove_prefix(1);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t'))
        v.remove_suffix(1);
      return v;
    }
    pos = eol;
  }
  return {};
}

bool icontains(std::string_view hay, std::string_view needle) {
  for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i)
    if (ieq(hay.substr(i, needle.size()), needle))
      return true;
  return false;
}

std::size_t skip_ws(std::string_view s, std::size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
    ++i;
  return i;
}

// End (one past) of the JSON value starting at s[i]; strings and nesting are
// followed, nothing is validated.
std::size_t value_end(std::string_view s, std::size_t i) {
  int depth = 0;
  bool in_string = false;
  for (; i < s.size(); ++i) {
    char ch = s[i];
    if (in_string) {
      if (ch == '\\')
        ++i;
      else if (ch == '"') {
        in_string = false;
        if (depth == 0)
          return i + 1;
      }
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '{' || ch == '[') {
      ++depth;
    } else if (ch == '}' || ch == ']') {
      if (depth == 0)
        return i;
      if (--depth == 0)
        return i + 1;
    } else if (depth == 0 && (ch == ',' || ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n')) {
      return i;
    }
  }
  return s.size();
}

// The raw JSON value of top-level-ish member `key` ("" when absent): the
// first occurrence of "key" followed by a colon. Good enough for the flat
// objects of herald-loadtest (its data payload comes after channels/event).
std::string_view member(std::string_view obj, std::string_view key) {
  std::string quoted = "\"" + std::string(key) + "\"";
  for (std::size_t p = obj.find(quoted); p != std::string_view::npos; p = obj.find(quoted, p + 1)) {
    std::size_t i = skip_ws(obj, p + quoted.size());
    if (i < obj.size() && obj[i] == ':') {
      i = skip_ws(obj, i + 1);
      return obj.substr(i, value_end(obj, i) - i);
    }
  }
  return {};
}

// A JSON string value without its quotes (escapes kept as they are), or "".
std::string_view unquote(std::string_view v) {
  return v.size() >= 2 && v.front() == '"' && v.back() == '"' ? v.substr(1, v.size() - 2)
                                                              : std::string_view{};
}

// --- WebSocket ------------------------------------------------------------------

std::string accept_for(std::string_view key) {
  std::string s(key);
  s += "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(s.data()), s.size(), digest);
  char b64[4 * ((SHA_DIGEST_LENGTH + 2) / 3) + 1];
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(b64), digest, SHA_DIGEST_LENGTH);
  return std::string(b64, static_cast<std::size_t>(n));
}

// One unmasked, unfragmented server frame.
std::string ws_frame(unsigned op, std::string_view payload) {
  std::string f;
  f.reserve(payload.size() + 10);
  f.push_back(static_cast<char>(0x80 | op));
  auto n = payload.size();
  if (n < 126) {
    f.push_back(static_cast<char>(n));
  } else if (n <= 0xffff) {
    f.push_back(static_cast<char>(126));
    f.push_back(static_cast<char>(n >> 8));
    f.push_back(static_cast<char>(n & 0xff));
  } else {
    f.push_back(static_cast<char>(127));
    for (int i = 7; i >= 0; --i)
      f.push_back(static_cast<char>((static_cast<std::uint64_t>(n) >> (8 * i)) & 0xff));
  }
  f.append(payload);
  return f;
}

// Sends a close frame with `code` and closes the socket. Always false.
bool ws_close(int fd, unsigned code) {
  char payload[2] = {static_cast<char>(code >> 8), static_cast<char>(code & 0xff)};
  if (send_all(fd, ws_frame(0x8, std::string_view(payload, 2))))
    drop(fd);
  return false;
}

// Answers one text message (a JSON command). False when fd was closed.
bool ws_command(int fd, std::string_view msg) {
  auto op = unquote(member(msg, "op"));
  auto id = member(msg, "id");
  auto channel = member(msg, "channel");
  std::string r = "{\"op\":\"";
  if (op == "subscribe" || op == "unsubscribe") {
    if (unquote(channel).empty()) {
      r += "error\"";
      if (!id.empty())
        r.append(",\"id\":").append(id);
      r += ",\"code\":\"invalid_request\",\"message\":\"channel missing\"}";
      return send_all(fd, ws_frame(0x1, r));
    }
    r += op == "subscribe" ? "subscribed\"" : "unsubscribed\"";
    if (!id.empty())
      r.append(",\"id\":").append(id);
    r.append(",\"channel\":").append(channel);
    if (op == "subscribe") {
      auto it = offsets.find(std::string(unquote(channel)));
      r += ",\"epoch\":\"baseline\",\"offset\":";
      r += std::to_string(it == offsets.end() ? 0 : it->second);
      r += ",\"recovered\":false";
    }
    r += '}';
  } else if (op == "ping" || op == "connect") {
    r += op == "ping" ? "pong\"" : "connected\"";
    if (!id.empty())
      r.append(",\"id\":").append(id);
    r += op == "ping" ? "}" : ",\"sub\":\"\",\"expires_at\":0}";
  } else {
    r += "error\"";
    if (!id.empty())
      r.append(",\"id\":").append(id);
    r += ",\"code\":\"unknown_op\",\"message\":\"herald-baseline answers subscribe, unsubscribe, "
         "ping, connect\"}";
  }
  return send_all(fd, ws_frame(0x1, r));
}

// Decodes the complete client frames in c.in. False when fd was closed.
bool ws_feed(int fd, conn& c) {
  auto* p = reinterpret_cast<unsigned char*>(c.in.data());
  const std::size_t n = c.in.size();
  std::size_t used = 0;
  while (n - used >= 2) {
    unsigned char* h = p + used;
    const bool fin = (h[0] & 0x80) != 0;
    const unsigned op = h[0] & 0x0f;
    if ((h[0] & 0x70) || !(h[1] & 0x80)) // reserved bits, or an unmasked client frame
      return ws_close(fd, 1002);
    std::uint64_t len = h[1] & 0x7f;
    std::size_t hs = 2;
    if (len == 126) {
      if (n - used < 4)
        break;
      len = (std::uint64_t{h[2]} << 8) | h[3];
      hs = 4;
    } else if (len == 127) {
      if (n - used < 10)
        break;
      len = 0;
      for (int i = 0; i < 8; ++i)
        len = (len << 8) | h[2 + i];
      hs = 10;
    }
    if (op >= 0x8 && (!fin || len > 125))
      return ws_close(fd, 1002);
    if (len > max_ws_message)
      return ws_close(fd, 1009);
    if (n - used < hs + 4 + len)
      break; // incomplete frame: wait for more bytes
    const unsigned char* key = h + hs;
    char* data = reinterpret_cast<char*>(h + hs + 4);
    for (std::size_t i = 0; i < len; ++i)
      data[i] = static_cast<char>(static_cast<unsigned char>(data[i]) ^ key[i & 3]);
    std::string_view payload(data, static_cast<std::size_t>(len));
    used += hs + 4 + static_cast<std::size_t>(len);
    switch (op) {
    case 0x8: { // close: echo the code (if any), then close
      if (send_all(fd, ws_frame(0x8, payload.substr(0, 2))))
        drop(fd);
      return false;
    }
    case 0x9:
      if (!send_all(fd, ws_frame(0xA, payload)))
        return false;
      break;
    case 0xA:
      break;
    case 0x1:
    case 0x0: {
      auto frag = fragments.find(fd);
      if ((op == 0x0) != (frag != fragments.end()))
        return ws_close(fd, 1002); // continuation without a message, or a new one inside one
      if (op == 0x1 && fin) {
        if (!ws_command(fd, payload))
          return false;
        break;
      }
      if (op == 0x1)
        frag = fragments.emplace(fd, std::string{}).first;
      if (frag->second.size() + payload.size() > max_ws_message)
        return ws_close(fd, 1009);
      frag->second.append(payload);
      if (fin) {
        std::string msg = std::move(frag->second);
        fragments.erase(frag);
        if (!ws_command(fd, msg))
          return false;
      }
      break;
    }
    case 0x2:
      return ws_close(fd, 1003);
    default:
      return ws_close(fd, 1002);
    }
  }
  c.in.erase(0, used);
  if (c.in.empty())
    std::string().swap(c.in); // an idle subscriber keeps no buffer
  return true;
}

// --- HTTP ---------------------------------------------------------------------

// Writes one publication to every subscriber: the SSE frame and the
// WebSocket frame are each built once.
void publish(std::string_view body) {
  const std::string sse_frame = "data: " + std::string(body) + "\n\n";
  // Every channel of the request advances by one; the WebSocket frame names the first.
  std::string first;
  std::uint64_t first_offset = 0;
  auto list = member(body, "channels");
  for (std::size_t i = 1; i + 1 < list.size();) {
    i = skip_ws(list, i);
    if (i >= list.size() || list[i] != '"')
      break;
    auto e = value_end(list, i);
    std::string name(unquote(list.substr(i, e - i)));
    auto off = ++offsets[name];
    if (first.empty()) {
      first = std::move(name);
      first_offset = off;
    }
    i = skip_ws(list, e);
    if (i < list.size() && list[i] == ',')
      ++i;
  }
  std::string ws_message;
  if (!subscribers[ws].empty()) {
    auto event = member(body, "event");
    auto data = member(body, "data");
    std::string m = "{\"op\":\"publication\",\"channel\":\"";
    m += first;
    m += "\",\"offset\":";
    m += std::to_string(first_offset);
    m += ",\"event\":";
    m += event.empty() ? std::string_view{"\"message\""} : event;
    m += ",\"data\":";
    m += data.empty() ? std::string_view{"null"} : data;
    m += '}';
    ws_message = ws_frame(0x1, m);
  }
  for (kind k : {sse, ws}) {
    const std::string& frame = k == sse ? sse_frame : ws_message;
    auto& list_k = subscribers[k];
    for (std::size_t i = list_k.size(); i-- > 0;)
      send_all(list_k[i], frame); // drop() swaps from the back: iterate backwards
  }
}

// Serves every complete request in c.in; false when fd was closed.
bool serve(int fd, conn& c) {
  for (;;) {
    auto end = c.in.find("\r\n\r\n");
    if (end == std::string::npos)
      return true;
    std::size_t length = 0;
    if (auto p = c.in.find("Content-Length:"); p != std::string::npos && p < end)
      length = std::strtoul(c.in.c_str() + p + 15, nullptr, 10);
    if (c.in.size() < end + 4 + length)
      return true;
    if (c.in.compare(0, 4, "GET ") == 0) {
      std::string_view head(c.in.data(), end + 4);
      if (!icontains(header(head, "Upgrade"), "websocket")) {
        std::string().swap(c.in); // whatever follows the GET is ignored
        make_subscriber(fd, c, sse);
        return send_all(
          fd,
          "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n");
      }
      auto key = header(head, "Sec-WebSocket-Key");
      if (key.empty() || header(head, "Sec-WebSocket-Version") != "13") {
        send_all(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        drop(fd);
        return false;
      }
      std::string answer =
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Accept: " +
        accept_for(key) + "\r\n\r\n";
      c.in.erase(0, end + 4);
      make_subscriber(fd, c, ws);
      if (!send_all(fd, answer))
        return false;
      return ws_feed(fd, c); // frames that came with the upgrade
    }
    if (c.in.compare(0, 22, "POST /v1/publish HTTP/") != 0) {
      send_all(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      drop(fd);
      return false;
    }
    publish(std::string_view(c.in).substr(end + 4, length));
    c.in.erase(0, end + 4 + length);
    if (!send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                      "14\r\n\r\n{\"offsets\":{}}"))
      return false;
  }
}
} // namespace

int main(int argc, char** argv) {
  int port = argc > 1 ? std::atoi(argv[1]) : 0;
  const char* host = argc > 2 ? argv[2] : "127.0.0.1";
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  // OpenSSL 3 sets itself up (~2 MiB) on first use: do it now, so that the
  // RSS sampled before the first connection already includes it.
  (void)accept_for("dGhlIHNhbXBsZSBub25jZQ==");

  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1 ||
      bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(lfd, SOMAXCONN) != 0) {
    std::perror("herald-baseline: listen");
    return 1;
  }
  socklen_t len = sizeof addr;
  getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::printf("herald-baseline listening on %s:%d\n", host, ntohs(addr.sin_port));
  std::fflush(stdout);

  int ep = epoll_create1(0);
  epoll_event ev{EPOLLIN, {}};
  ev.data.fd = lfd;
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  std::vector<epoll_event> events(1024);
  static char buf[65536];
  for (;;) {
    int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), -1);
    for (int i = 0; i < n; ++i) {
      int fd = events[static_cast<std::size_t>(i)].data.fd;
      if (fd == lfd) {
        for (int c; (c = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK)) >= 0;) {
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          epoll_event cev{EPOLLIN | EPOLLRDHUP, {}};
          cev.data.fd = c;
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
          conns[c];
        }
        continue;
      }
      auto it = conns.find(fd);
      if (it == conns.end())
        continue;
      ssize_t r = read(fd, buf, sizeof buf);
      if (r <= 0) {
        drop(fd);
        continue;
      }
      conn& c = it->second;
      if (c.k == sse)
        continue; // what an SSE subscriber sends is ignored
      c.in.append(buf, static_cast<std::size_t>(r));
      if (c.k == ws)
        ws_feed(fd, c);
      else
        serve(fd, c);
    }
  }
}
