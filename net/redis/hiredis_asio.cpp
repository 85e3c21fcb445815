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
    ac_->ev.addRead = [](void* p) { static_cast<asio_adapter*>(p)->add_read(); };
    ac_->ev.delRead = [](void* p) { static_cast<asio_adapter*>(p)->want_read_ = false; };
    ac_->ev.addWrite = [](void* p) { static_cast<asio_adapter*>(p)->add_write(); };
    ac_->ev.delWrite = [](void* p) { static_cast<asio_adapter*>(p)->want_write_ = false; };
    ac_->ev.cleanup = [](void* p) { static_cast<asio_adapter*>(p)->cleanup(); };
    return true;
  }

private:
  // hiredis calls addRead/addWrite repeatedly; at most one wait of each kind
  // is pending. Asio re-arms the (edge-triggered) epoll registration for
  // every wait, so a socket that is already readable completes at once.
  void add_read() {
    want_read_ = true;
    if (read_pending_ || ac_ == nullptr)
      return;
    read_pending_ = true;
    descriptor_.async_wait(asio::posix::stream_descriptor::wait_read,
                           [self = shared_from_this()](boost::system::error_code ec) {
                             self->read_pending_ = false;
                             if (ec || self->ac_ == nullptr || !self->want_read_)
                               return;
                             // Runs reply callbacks; may free the context (cleanup).
                             redisAsyncHandleRead(self->ac_);
                             if (self->ac_ != nullptr && self->want_read_)
                               self->add_read();
                           });
  }

  void add_write() {
    want_write_ = true;
    if (write_pending_ || ac_ == nullptr)
      return;
    write_pending_ = true;
    descriptor_.async_wait(asio::posix::stream_descriptor::wait_write,
                           [self = shared_from_this()](boost::system::error_code ec) {
                             self->write_pending_ = false;
                             if (ec || self->ac_ == nullptr || !self->want_write_)
                               return;
                             // Completes a connect (onConnect) or flushes the output
                             // buffer; may free the context.
                             redisAsyncHandleWrite(self->ac_);
                             if (self->ac_ != nullptr && self->want_write_)
                               self->add_write(); // partial write: wait again
                           });
  }

  // hiredis calls this right before it closes the fd and frees the context.
  void cleanup() {
    want_read_ = want_write_ = false;
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
  bool want_read_ = false;
  bool want_write_ = false;
  bool read_pending_ = false;
  bool write_pending_ = false;
};

} // namespace

bool attach_to_asio(const asio::any_io_executor& executor, redisAsyncContext* ac) {
  if (ac == nullptr || ac->ev.data != nullptr || ac->c.fd < 0)
    return false;
  auto adapter = std::make_shared<asio_adapter>(executor, ac);
  return adapter->install();
}

} // namespace herald::net::redis
