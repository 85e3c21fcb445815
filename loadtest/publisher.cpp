#include "loadtest/publisher.hpp"

#include "loadtest/clock.hpp"
#include "loadtest/payload.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <nlohmann/json.hpp>

#include <deque>
#include <future>
#include <optional>

namespace herald::loadtest {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {
struct queued {
  std::uint64_t seq;
  std::int64_t due_ns;
};
struct in_flight {
  std::uint64_t seq;
  std::int64_t sent_ns;
};
// Connection attempts in a row (200 ms apart) before the publisher gives up.
constexpr int max_connect_failures = 25;
} // namespace

struct publisher::impl : std::enable_shared_from_this<publisher::impl> {
  struct conn {
    explicit conn(asio::io_context& ioc)
      : socket(ioc),
        retry(ioc) {}
    tcp::socket socket;
    asio::steady_timer retry;
    boost::beast::flat_buffer buffer;
    std::optional<bhttp::response_parser<bhttp::string_body>> parser;
    std::deque<queued> backlog;
    std::deque<in_flight> inflight;
    std::string pending; // requests not yet handed to a write
    std::string writing; // requests being written
    std::uint32_t gen = 0;
    int connect_failures = 0; // in a row
    bool connected = false;
    bool connecting = false;
    bool reading = false;
    bool write_busy = false;
  };

  impl(asio::io_context& ioc, publisher_config c)
    : ioc(ioc),
      cfg(std::move(c)),
      timer(ioc),
      names(cfg.plan.names()),
      last_offset(names.size(), 0) {
    auto colon = cfg.target.rfind(':');
    endpoint = tcp::endpoint(asio::ip::make_address_v4(cfg.target.substr(0, colon)),
                             static_cast<unsigned short>(std::stoul(cfg.target.substr(colon + 1))));
    for (unsigned i = 0; i < std::max(1u, cfg.connections); ++i)
      conns.push_back(std::make_unique<conn>(ioc));
    st.ok_per_channel.assign(names.size(), 0);
  }

  // --- scheduling (I/O thread) ---

  void begin(std::uint64_t first, std::uint64_t count, double r) {
    // A new batch starts after whatever is still scheduled.
    first_seq = first;
    next_seq = first;
    end_seq = first + count;
    rate = r > 0 ? r : 1;
    start_ns = mono_ns();
    stopped = false;
    tick();
  }

  void tick() {
    if (stopped)
      return;
    auto now = mono_ns();
    while (next_seq < end_seq) {
      auto due = start_ns +
                 static_cast<std::int64_t>(static_cast<double>(next_seq - first_seq) * 1e9 / rate);
      if (due > now) {
        timer.expires_after(std::chrono::nanoseconds(due - now));
        timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
          if (!ec)
            self->tick();
        });
        return;
      }
      issue(next_seq++, due);
    }
  }

  void issue(std::uint64_t seq, std::int64_t due) {
    {
      std::lock_guard lock(mu);
      ++st.scheduled;
    }
    auto ids = cfg.plan.channels_of_publication(seq);
    auto& c = *conns[static_cast<std::size_t>(ids.front()) % conns.size()];
    c.backlog.push_back({seq, due});
    pump(c);
  }

  std::string request_for(std::uint64_t seq, std::int64_t now) const {
    auto ids = cfg.plan.channels_of_publication(seq);
    std::string body = R"({"channels":[)";
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (i)
        body += ',';
      body += '"';
      body += names[static_cast<std::size_t>(ids[i])];
      body += '"';
    }
    body += R"(],"event":")";
    body += cfg.event;
    body += R"(","data":)";
    body += make_data(seq, static_cast<std::uint64_t>(now), ids, cfg.payload_bytes);
    body += '}';
    std::string req = "POST /v1/publish HTTP/1.1\r\nHost: ";
    req += cfg.target;
    req += "\r\nContent-Type: application/json\r\nContent-Length: ";
    req += std::to_string(body.size());
    req += "\r\n\r\n";
    req += body;
    return req;
  }

  // Moves due publications into requests while the connection has room.
  void pump(conn& c) {
    if (stopped)
      return;
    if (!c.connected) {
      connect(c);
      return;
    }
    auto now = mono_ns();
    std::uint64_t written = 0;
    while (!c.backlog.empty() && c.inflight.size() < std::max(1u, cfg.inflight)) {
      auto q = c.backlog.front();
      c.backlog.pop_front();
      c.pending += request_for(q.seq, now);
      c.inflight.push_back({q.seq, now});
      st_lag_record(static_cast<std::uint64_t>(std::max<std::int64_t>(0, now - q.due_ns)));
      ++written;
    }
    if (written) {
      std::lock_guard lock(mu);
      st.sent += written;
      if (st.first_send_ns == 0)
        st.first_send_ns = now;
      st.last_send_ns = now;
    }
    if (!c.pending.empty() && !c.write_busy)
      write(c);
    if (!c.reading)
      read(c);
  }

  void st_lag_record(std::uint64_t v) {
    std::lock_guard lock(mu);
    st.lag.record(v);
  }

  void connect(conn& c) {
    if (c.connecting)
      return;
    c.connecting = true;
    boost::system::error_code ec;
    if (c.socket.is_open())
      c.socket.close(ec);
    c.socket.async_connect(
      endpoint, [self = shared_from_this(), &c, g = c.gen](const boost::system::error_code& e) {
        if (g != c.gen)
          return;
        c.connecting = false;
        if (e) {
          self->error("connect: " + e.message());
          if (++c.connect_failures >= max_connect_failures) {
            self->error("gave up: cannot connect to " + self->cfg.target);
            self->halt();
            return;
          }
          c.retry.expires_after(std::chrono::milliseconds(200));
          c.retry.async_wait([self, &c](const boost::system::error_code& we) {
            if (!we)
              self->pump(c);
          });
          return;
        }
        boost::system::error_code ignored;
        c.socket.set_option(tcp::no_delay(true), ignored);
        c.connected = true;
        c.connect_failures = 0;
        c.buffer.clear();
        self->pump(c);
      });
  }

  void write(conn& c) {
    c.writing.swap(c.pending);
    c.pending.clear();
    c.write_busy = true;
    asio::async_write(
      c.socket, asio::buffer(c.writing),
      [self = shared_from_this(), &c, g = c.gen](const boost::system::error_code& ec, std::size_t) {
        if (g != c.gen)
          return;
        c.write_busy = false;
        c.writing.clear();
        if (ec) {
          self->lost(c, "write: " + ec.message());
          return;
        }
        if (!c.pending.empty())
          self->write(c);
      });
  }

  // Keeps one read pending while connected, so a server closing an idle
  // keep-alive connection is noticed before the next request goes out.
  void read(conn& c) {
    c.reading = true;
    c.parser.emplace();
    c.parser->body_limit(1024 * 1024);
    bhttp::async_read(
      c.socket, c.buffer, *c.parser,
      [self = shared_from_this(), &c, g = c.gen](const boost::system::error_code& ec, std::size_t) {
        if (g != c.gen)
          return;
        c.reading = false;
        if (ec) {
          if (c.inflight.empty() && (ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
                                     ec == asio::error::connection_reset)) {
            self->reset(c); // idle connection closed by the server
            if (!c.backlog.empty())
              self->pump(c);
            return;
          }
          self->lost(c, "read: " + ec.message());
          return;
        }
        self->on_response(c);
      });
  }

  void on_response(conn& c) {
    auto now = mono_ns();
    auto res = c.parser->release();
    if (c.inflight.empty()) {
      lost(c, "unexpected response");
      return;
    }
    auto item = c.inflight.front();
    c.inflight.pop_front();
    {
      std::lock_guard lock(mu);
      st.rtt.record(static_cast<std::uint64_t>(std::max<std::int64_t>(0, now - item.sent_ns)));
      if (res.result_int() == 200) {
        ++st.ok;
        st.last_ok_ns = now;
        auto ids = cfg.plan.channels_of_publication(item.seq);
        for (int id : ids)
          ++st.ok_per_channel[static_cast<std::size_t>(id)];
        check_offsets(res.body(), ids);
      } else {
        ++st.failed;
        auto j = nlohmann::json::parse(res.body(), nullptr, false);
        std::string code = "?";
        if (j.is_object() && j.contains("error") && j["error"].is_object())
          code = j["error"].value("code", std::string{"?"});
        ++st.errors["HTTP " + std::to_string(res.result_int()) + " " + code];
      }
    }
    cv.notify_all();
    if (!res.keep_alive()) {
      lost(c, "server closed the connection");
      return;
    }
    pump(c);
  }

  // Herald answers {"offsets":{channel:offset}}: each channel's offsets must
  // advance by one per publication (one publisher per channel). Under mu.
  void check_offsets(const std::string& body, const std::vector<int>& ids) {
    auto j = nlohmann::json::parse(body, nullptr, false);
    if (!j.is_object() || !j.contains("offsets") || !j["offsets"].is_object()) {
      ++st.errors["answer without offsets"];
      return;
    }
    const auto& offsets = j["offsets"];
    if (offsets.empty()) {
      st.broadcast = true;
      return;
    }
    for (int id : ids) {
      const auto& name = names[static_cast<std::size_t>(id)];
      if (!offsets.contains(name) || !offsets[name].is_number_unsigned()) {
        ++st.offset_anomalies;
        continue;
      }
      auto off = offsets[name].get<std::uint64_t>();
      auto& last = last_offset[static_cast<std::size_t>(id)];
      if (last != 0 && off != last + 1)
        ++st.offset_anomalies;
      last = off;
    }
  }

  void reset(conn& c) {
    ++c.gen;
    boost::system::error_code ignored;
    c.socket.close(ignored);
    c.connected = c.connecting = c.reading = c.write_busy = false;
    c.pending.clear();
    c.writing.clear();
    c.buffer.clear();
  }

  // The connection broke: requests in flight have no known outcome.
  void lost(conn& c, const std::string& why) {
    {
      std::lock_guard lock(mu);
      st.unknown += c.inflight.size();
      ++st.errors[why];
    }
    c.inflight.clear();
    reset(c);
    cv.notify_all();
    if (!c.backlog.empty() && !stopped) {
      c.retry.expires_after(std::chrono::milliseconds(100));
      c.retry.async_wait([self = shared_from_this(), &c](const boost::system::error_code& ec) {
        if (!ec)
          self->pump(c);
      });
    }
  }

  void error(const std::string& what) {
    std::lock_guard lock(mu);
    ++st.errors[what];
  }

  void halt() {
    stopped = true;
    timer.cancel();
    std::uint64_t dropped = end_seq - next_seq;
    next_seq = end_seq;
    for (auto& c : conns) {
      dropped += c->backlog.size();
      c->backlog.clear();
      c->retry.cancel();
      {
        std::lock_guard lock(mu);
        st.unknown += c->inflight.size();
      }
      c->inflight.clear();
      reset(*c);
    }
    {
      std::lock_guard lock(mu);
      st.failed += dropped;
      if (dropped)
        st.errors["not sent (stopped)"] += dropped;
    }
    cv.notify_all();
  }

  asio::io_context& ioc;
  publisher_config cfg;
  tcp::endpoint endpoint;
  asio::steady_timer timer;
  std::vector<std::string> names;
  std::vector<std::uint64_t> last_offset; // by channel id (I/O thread, under mu)
  std::vector<std::unique_ptr<conn>> conns;
  std::uint64_t first_seq = 1, next_seq = 1, end_seq = 1;
  double rate = 1;
  std::int64_t start_ns = 0;
  bool stopped = false;

  mutable std::mutex mu;
  std::condition_variable cv;
  publisher_stats st;
};

publisher::publisher(asio::io_context& ioc, publisher_config cfg)
  : impl_(std::make_shared<impl>(ioc, std::move(cfg))) {}

publisher::~publisher() = default;

void publisher::start(std::uint64_t first_seq, std::uint64_t count, double rate) {
  {
    std::lock_guard lock(impl_->mu);
    impl_->st.requested += count;
  }
  asio::post(impl_->ioc,
             [self = impl_, first_seq, count, rate] { self->begin(first_seq, count, rate); });
}

bool publisher::wait_idle(std::int64_t deadline_ns, const std::atomic<bool>* stop) {
  std::unique_lock lock(impl_->mu);
  while (!impl_->st.idle()) {
    if (mono_ns() >= deadline_ns || (stop && stop->load()))
      return false;
    impl_->cv.wait_for(lock, std::chrono::milliseconds(20));
  }
  return true;
}

publisher_stats publisher::stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->st;
}

std::uint64_t publisher::sent_count() const {
  std::lock_guard lock(impl_->mu);
  return impl_->st.sent;
}

void publisher::stop() {
  auto done = std::make_shared<std::promise<void>>();
  auto f = done->get_future();
  asio::post(impl_->ioc, [self = impl_, done] {
    self->halt();
    done->set_value();
  });
  if (f.wait_for(std::chrono::seconds(5)) != std::future_status::ready)
    return; // the I/O thread is gone; nothing left to stop
}

} // namespace herald::loadtest
