#include "net/core/io_shard.hpp"

namespace herald::net {

io_shard::io_shard(asio::execution_context& ctx)
  : asio::execution_context::service(ctx) {
  // Only ever created through io_shard::of(), on an io_context.
  ioc_ = static_cast<asio::io_context*>(&ctx);
}

io_shard& io_shard::of(asio::io_context& ioc) {
  return asio::use_service<io_shard>(ioc);
}

io_shard& io_shard::of(const asio::any_io_executor& ex) {
  return asio::use_service<io_shard>(asio::query(ex, asio::execution::context));
}

void io_shard::push(item it) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    pending_.push_back(std::move(it));
    if (!scheduled_)
      wake = scheduled_ = true;
  }
  if (wake)
    asio::post(*ioc_, [this] { drain(); });
}

void io_shard::fanout(publication_ptr p, subscriber_list_ptr list) {
  push({std::move(p), std::move(list), {}});
}

void io_shard::answer(std::shared_ptr<delivery_sink> to, subscription_answer answer) {
  push({{}, {}, [to = std::move(to), a = std::move(answer)] { to->on_answer(a); }});
}

void io_shard::post(std::function<void()> task) {
  push({{}, {}, std::move(task)});
}

void io_shard::drain() {
  std::size_t budget = turn_budget;
  for (;;) {
    if (next_ == running_.size()) {
      running_.clear();
      next_ = 0;
      std::lock_guard<std::mutex> guard{mtx_};
      if (pending_.empty()) {
        scheduled_ = false;
        return;
      }
      running_.swap(pending_);
    }
    if (budget == 0)
      break;
    auto& x = running_[next_];
    if (x.list) {
      const auto& list = *x.list;
      while (next_session_ < list.size() && budget > 0) {
        list[next_session_++]->on_publication(x.pub);
        --budget;
      }
      if (next_session_ < list.size())
        break; // the rest of this fan-out next turn
      next_session_ = 0;
    } else {
      if (x.task)
        x.task();
      --budget;
    }
    x = item{}; // release the publication, the list or the task's captures now
    ++next_;
  }
  // Out of budget with work left: run again behind what is ready now.
  asio::post(*ioc_, [this] { drain(); });
}

void io_shard::shutdown() {
  std::vector<item> drop;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    drop.swap(pending_);
  }
  running_.clear();
  next_ = next_session_ = 0;
}

io_shards::io_shards(std::size_t count) {
  if (count == 0)
    count = 1;
  for (std::size_t i = 0; i < count; ++i) {
    contexts_.push_back(std::make_unique<asio::io_context>(1));
    io_shard::of(*contexts_.back()).index_ = i;
  }
}

io_shards::~io_shards() {
  stop();
  for (auto& t : threads_)
    if (t.joinable())
      t.join();
}

asio::io_context& io_shards::next() noexcept {
  return *contexts_[next_.fetch_add(1, std::memory_order_relaxed) % contexts_.size()];
}

void io_shards::run() {
  guards_.clear();
  threads_.clear();
  for (std::size_t i = 1; i < contexts_.size(); ++i) {
    auto& ioc = *contexts_[i];
    ioc.restart();
    guards_.push_back(asio::make_work_guard(ioc));
    threads_.emplace_back([&ioc] { ioc.run(); });
  }
  contexts_.front()->run();
  stop();
  for (auto& t : threads_)
    t.join();
  threads_.clear();
  guards_.clear();
}

void io_shards::stop() {
  for (auto& c : contexts_)
    c->stop();
}

} // namespace herald::net
