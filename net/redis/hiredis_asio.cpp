#include "net/redis/hiredis_asio.hpp"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <memory>

namespace herald::net::redis {

namespace {

class asio_adapter : public std::enable_shared_from_this<asio_adapter> {
public:
  asio_adapter(const asio::any_io_executor& executor, redisAsyncContext* ac)
    : descriptor_(executor),
      ac_(ac) {}

  bool install() {
    boost::system::error_code ec;
    descriptor_.assign(ac_->c.fd, ec);
    if (ec)
      return false;
    // The context owns the adapter until cleanup(); shared_ptr copies in the
    // pending handlers may outlive that.
    self_ = shared_from_this();
    ac_->ev.data = this;
    ac_->ev.addRead = [](void* p) {
      auto* a = static_cast<asio_adapter*>(p);
      a->add(a->read_, asio::posix::stream_descriptor::wait_read, redisAsyncHandleRead);
    };
    ac_->ev.delRead = [](void* p) { static_cast<asio_adapter*>(p)->read_.wanted = false; };
    ac_->ev.addWrite = [](void* p) {
      auto* a = static_cast<asio_adapter*>(p);
      a->add(a->write_, asio::posix::stream_descriptor::wait_write, redisAsyncHandleWrite);
    };
    ac_->ev.delWrite = [](void* p) { static_cast<asio_adapter*>(p)->write_.wanted = false; };
    ac_->ev.cleanup = [](void* p) { static_cast<asio_adapter*>(p)->cleanup(); };
    return true;
  }

private:
  // What hiredis asked for one kind of readiness (read or write), and
  // whether our wait for it is pending.
  struct direction {
    bool wanted = false;
    bool pending = false;
  };

  // hiredis calls addRead/addWrite repeatedly; at most one wait of each kind
  // is pending. Asio re-arms the (edge-triggered) epoll registration for
  // every wait, so a socket that is already readable completes at once.
  // `handle` is redisAsyncHandleRead (runs reply callbacks) or
  // redisAsyncHandleWrite (completes a connect, onConnect, or flushes the
  // output buffer); either may free the context (cleanup). While hiredis
  // still wants it (more to read, a partial write), wait again.
  void add(direction& d, asio::posix::stream_descriptor::wait_type type,
           void (*handle)(redisAsyncContext*)) {
    d.wanted = true;
    if (d.pending || ac_ == nullptr)
      return;
    d.pending = true;
    descriptor_.async_wait(
      type, [self = shared_from_this(), &d, type, handle](boost::system::error_code ec) {
        d.pending = false; // d is a member of *self, which the handler keeps alive
        if (ec || self->ac_ == nullptr || !d.wanted)
          return;
        handle(self->ac_);
        if (self->ac_ != nullptr && d.wanted)
          self->add(d, type, handle);
      });
  }

  // hiredis calls this right before it closes the fd and frees the context.
  void cleanup() {
    read_.wanted = write_.wanted = false;
    if (ac_ != nullptr)
      ac_->ev.data = nullptr;
    ac_ = nullptr;
    boost::system::error_code ignored;
    descriptor_.cancel(ignored); // pending waits complete with operation_aborted
    descriptor_.release();       // hand the fd back: hiredis closes it, not Asio
    self_.reset();               // pending handlers still hold copies
  }

  asio::posix::stream_descriptor descriptor_;
  redisAsyncContext* ac_;
  std::shared_ptr<asio_adapter> self_;
  direction read_;
  direction write_;
};

} // namespace

bool attach_to_asio(const asio::any_io_executor& executor, redisAsyncContext* ac) {
  if (ac == nullptr || ac->ev.data != nullptr || ac->c.fd < 0)
    return false;
  auto adapter = std::make_shared<asio_adapter>(executor, ac);
  return adapter->install();
}

} // namespace herald::net::redis
