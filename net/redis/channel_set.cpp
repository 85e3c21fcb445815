#include "net/redis/channel_set.hpp"

#include <algorithm>

namespace herald::net::redis {

bool channel_set::want(const std::string& channel) {
  if (!wanted_.insert(channel).second)
    return false;
  dirty_.insert(channel);
  return true;
}

bool channel_set::unwant(const std::string& channel) {
  if (!lose(channel))
    return false;
  dirty_.insert(channel); // an UNSUBSCRIBE to send, if Redis has it
  return true;
}

void channel_set::connected() {
  connected_ = true;
  server_.clear();
  dirty_.clear();
  dirty_.insert(wanted_.begin(), wanted_.end());
  resubscribing_ = wanted_;
}

void channel_set::disconnected() {
  connected_ = false;
  server_.clear();
  dirty_.clear();
  resubscribing_.clear();
}

std::vector<std::string> channel_set::unsettled() const {
  std::vector<std::string> out(resubscribing_.begin(), resubscribing_.end());
  std::sort(out.begin(), out.end());
  return out;
}

channel_set::changes channel_set::take_changes() {
  changes out;
  if (!connected_)
    return out;
  for (const auto& channel : dirty_) {
    bool want = wanted_.count(channel) > 0;
    auto it = server_.find(channel);
    if (it == server_.end()) {
      if (want) {
        out.subscribe.push_back(channel);
        server_.emplace(channel, state::subscribing);
      }
    } else if (it->second == state::subscribed) {
      if (!want) {
        out.unsubscribe.push_back(channel);
        it->second = state::unsubscribing;
      }
    }
    // In flight (subscribing / unsubscribing): its confirmation compares
    // the state with the wanted set again, so it need not stay marked.
  }
  dirty_.clear();
  return out;
}

bool channel_set::on_subscribed(const std::string& channel) {
  resubscribing_.erase(channel);
  auto it = server_.find(channel);
  if (it == server_.end() || it->second != state::subscribing)
    return false;
  it->second = state::subscribed;
  if (wanted_.count(channel) > 0)
    return true;
  dirty_.insert(channel); // unwanted while in flight: unsubscribe now
  return false;
}

void channel_set::on_unsubscribed(const std::string& channel) {
  auto it = server_.find(channel);
  if (it == server_.end() || it->second != state::unsubscribing)
    return;
  server_.erase(it);
  if (wanted_.count(channel) > 0)
    dirty_.insert(channel); // wanted again while in flight: subscribe now
}

bool channel_set::on_refused(const std::string& channel) {
  forget_server(channel, state::subscribing);
  resubscribing_.erase(channel);
  return lose(channel);
}

bool channel_set::on_dropped(const std::string& channel) {
  return forget_server(channel, state::subscribed) && lose(channel);
}

bool channel_set::forget_server(const std::string& channel, state s) {
  auto it = server_.find(channel);
  if (it == server_.end() || it->second != s)
    return false;
  server_.erase(it);
  return true;
}

bool channel_set::lose(const std::string& channel) {
  if (wanted_.erase(channel) == 0)
    return false;
  dirty_.erase(channel);
  resubscribing_.erase(channel); // settled() no longer waits for it
  return true;
}

std::optional<channel_set::state> channel_set::server_state(const std::string& channel) const {
  auto it = server_.find(channel);
  if (it == server_.end())
    return std::nullopt;
  return it->second;
}

bool channel_set::confirmed(const std::string& channel) const {
  auto it = server_.find(channel);
  return it != server_.end() && it->second == state::subscribed && wanted_.count(channel) > 0;
}

std::size_t channel_set::confirmed_count() const noexcept {
  return static_cast<std::size_t>(std::count_if(
    server_.begin(), server_.end(), [](const auto& kv) { return kv.second == state::subscribed; }));
}

} // namespace herald::net::redis
