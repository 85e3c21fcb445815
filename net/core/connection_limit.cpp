#include "net/core/connection_limit.hpp"

#include "net/wire/errors.hpp"

#include <array>

namespace herald::net {

std::shared_ptr<connection_limit> connection_limit::create(std::size_t max_per_address) {
  return std::shared_ptr<connection_limit>(new connection_limit(max_per_address));
}

std::string connection_limit::key_of(const asio::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped())
    return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).to_string();
  return a.to_string();
}

std::shared_ptr<void> connection_limit::acquire(const asio::ip::address& peer) {
  if (max_ == 0)
    return std::make_shared<int>(0);
  auto key = key_of(peer);
  {
    std::lock_guard<std::mutex> lock{mtx_};
    auto& n = open_[key];
    if (n >= max_)
      return nullptr;
    ++n;
  }
  // The slot keeps the limit alive: sessions may outlive the listener.
  struct slot {
    slot(std::shared_ptr<connection_limit> o, std::string k)
      : owner(std::move(o)),
        key(std::move(k)) {}
    slot(const slot&) = delete;
    slot& operator=(const slot&) = delete;
    ~slot() { owner->release(key); }
    std::shared_ptr<connection_limit> owner;
    std::string key;
  };
  return std::make_shared<slot>(shared_from_this(), std::move(key));
}

void connection_limit::release(const std::string& key) {
  std::lock_guard<std::mutex> lock{mtx_};
  auto it = open_.find(key);
  if (it == open_.end())
    return;
  if (--it->second == 0)
    open_.erase(it);
}

std::size_t connection_limit::count(const asio::ip::address& peer) const {
  std::lock_guard<std::mutex> lock{mtx_};
  auto it = open_.find(key_of(peer));
  return it == open_.end() ? 0 : it->second;
}

namespace {

// One refused connection: write the 429, half-close, drain, close.
struct refusal : std::enable_shared_from_this<refusal> {
  beast::tcp_stream stream;
  std::string response;
  std::array<char, 4096> sink{};

  refusal(tcp::socket s, std::size_t limit)
    : stream(std::move(s)) {
    auto body = error_body(errc::too_many_connections, "at most " + std::to_string(limit) +
                                                         " connections at once from one address");
    response = "HTTP/1.1 429 Too Many Requests\r\nServer: herald\r\n"
               "Content-Type: application/json\r\nCache-Control: no-store\r\n"
               "Connection: close\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body;
  }

  void run(std::chrono::milliseconds write_timeout) {
    stream.expires_after(write_timeout);
    asio::async_write(stream, asio::buffer(response),
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (ec)
                          return; // timed out or reset: the stream is closed
                        beast::error_code ignored;
                        self->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
                        // Read what the client sent so that closing does not
                        // reset the connection before it read the answer.
                        self->stream.expires_after(std::chrono::seconds(1));
                        self->drain();
                      });
  }

  void drain() {
    stream.async_read_some(asio::buffer(sink),
                           [self = shared_from_this()](beast::error_code ec, std::size_t) {
                             if (!ec) {
                               self->drain();
                               return;
                             }
                             beast::error_code ignored;
                             self->stream.socket().close(ignored);
                           });
  }
};

} // namespace

void refuse_connection(tcp::socket socket, std::chrono::milliseconds write_timeout,
                       std::size_t limit) {
  std::make_shared<refusal>(std::move(socket), limit)->run(write_timeout);
}

} // namespace herald::net
