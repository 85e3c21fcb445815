#include "net/delivery_service.hpp"

namespace herald::net {

delivery_service::delivery_service(asio::execution_context& ctx)
  : asio::execution_context::service(ctx) {
}

void delivery_service::post(std::shared_ptr<delivery_target> target, std::string prefix,
                            frame body, std::int64_t accepted_ns) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    pending_.push_back({std::move(target), std::move(prefix), std::move(body), accepted_ns});
    if (!scheduled_)
      wake = scheduled_ = true;
  }
  if (wake)
    asio::post(*ioc_, [this] { drain(); });
}

void delivery_service::drain() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    running_.swap(pending_);
    scheduled_ = false;
  }
  for (auto& x : running_)
    x.target->on_batched_delivery(std::move(x.prefix), std::move(x.body), x.accepted_ns);
  running_.clear();
}

void delivery_service::shutdown() {
  std::lock_guard<std::mutex> guard{mtx_};
  pending_.clear();
  running_.clear();
}

} // namespace herald::net
