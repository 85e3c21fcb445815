// stop_on_exit: stops Redis clients when the test ends, also when a REQUIRE
// throws. It holds a reference (a shared_ptr copy) to each, so a test that
// checks that a stopped client is freed must not use it.
#pragma once

#include <functional>
#include <memory>
#include <vector>

namespace herald::test {

class stop_on_exit {
public:
  /// Stops each client (an empty pointer is skipped) in the order given.
  template <class... Client>
  explicit stop_on_exit(std::shared_ptr<Client>... clients) {
    (add(std::move(clients)), ...);
  }
  ~stop_on_exit() {
    for (auto& stop : stops_)
      stop();
  }
  stop_on_exit(const stop_on_exit&) = delete;
  stop_on_exit& operator=(const stop_on_exit&) = delete;

private:
  template <class Client>
  void add(std::shared_ptr<Client> c) {
    stops_.push_back([c = std::move(c)] {
      if (c)
        c->stop();
    });
  }

  std::vector<std::function<void()>> stops_;
};

} // namespace herald::test
