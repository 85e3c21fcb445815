// herald-baseline: the machine's limit to compare Herald against, with the
// same client and protocol. A single-threaded epoll loop that
//   - answers any GET with a fixed "200 text/event-stream" head and keeps the
//     socket as a subscriber (channels, cursors and history are ignored);
//   - on POST /v1/publish writes one pre-built SSE frame ("data: <body>\n\n")
//     to every subscriber and answers 200 {"offsets":{}} (keep-alive).
// A subscriber whose socket cannot take the whole frame at once is closed.
// Usage: herald-baseline [port (0: any)] [host (127.0.0.1)]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace {
struct conn {
  std::string in;
  bool subscriber = false;
};
std::unordered_map<int, conn> conns;
std::vector<int> subscribers;

void drop(int fd) {
  if (conns[fd].subscriber)
    for (auto& s : subscribers)
      if (s == fd) {
        s = subscribers.back();
        subscribers.pop_back();
        break;
      }
  conns.erase(fd);
  close(fd);
}

void send_all(int fd, const std::string& s) {
  if (write(fd, s.data(), s.size()) != static_cast<ssize_t>(s.size()))
    drop(fd);
}

// Serves every complete request in c.in; false when fd was closed.
bool serve(int fd, conn& c) {
  for (;;) {
    auto end = c.in.find("\r\n\r\n");
    if (c.subscriber || end == std::string::npos)
      return true;
    std::size_t length = 0;
    if (auto p = c.in.find("Content-Length:"); p != std::string::npos && p < end)
      length = std::strtoul(c.in.c_str() + p + 15, nullptr, 10);
    if (c.in.size() < end + 4 + length)
      return true;
    if (c.in.compare(0, 4, "GET ") == 0) {
      c.subscriber = true;
      subscribers.push_back(fd);
      send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n");
      return conns.count(fd) > 0;
    }
    if (c.in.compare(0, 22, "POST /v1/publish HTTP/") != 0) {
      send_all(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      drop(fd);
      return false;
    }
    const std::string frame = "data: " + c.in.substr(end + 4, length) + "\n\n";
    c.in.erase(0, end + 4 + length);
    for (std::size_t i = subscribers.size(); i-- > 0;)
      send_all(subscribers[i], frame); // drop() swaps from the back: iterate backwards
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{\"offsets\":{}}");
    if (!conns.count(fd))
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

  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1 || bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0
      || listen(lfd, SOMAXCONN) != 0) {
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
  char buf[65536];
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
        drop(fd); // closing removes it from the epoll set too
        continue;
      }
      if (!it->second.subscriber) {
        it->second.in.append(buf, static_cast<std::size_t>(r));
        serve(fd, it->second);
      }
    }
  }
}
