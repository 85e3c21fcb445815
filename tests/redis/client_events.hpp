// Event recorders for the Redis clients under test: each attach() sets the
// client's callbacks to record into the recorder, which must outlive the
// client's events (declare it after the client, or stop the client first).
// What the tests then wait for (run_until) and check. Test thread only.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace herald::test {

/// on_up / on_down of anything that has them (connection, subscriber,
/// cluster_client).
struct link_events {
  bool up = false; ///< between on_up and on_down
  int ups = 0;
  int downs = 0;
  std::vector<std::string> down_reasons;

  template <class Client>
  void attach(Client& c) {
    c.on_up = [this] {
      up = true;
      ++ups;
    };
    c.on_down = [this](const std::string& why) {
      up = false;
      ++downs;
      down_reasons.push_back(why);
    };
  }
};

/// A subscriber's link events, plus its messages (channel, payload) in
/// arrival order, each channel's confirmations, the reasons of failed
/// attempts, and on_lost (channel, error).
struct pubsub_events : link_events {
  std::vector<std::pair<std::string, std::string>> messages;
  std::map<std::string, int> subscribed;
  std::vector<std::string> attempt_failures;
  std::vector<std::pair<std::string, std::string>> lost;

  template <class Subscriber>
  void attach(Subscriber& s) {
    link_events::attach(s);
    s.on_message = [this](std::string channel, std::string payload) {
      messages.emplace_back(std::move(channel), std::move(payload));
    };
    s.on_subscribed = [this](const std::string& channel) { ++subscribed[channel]; };
    s.on_attempt_failed = [this](const std::string& why) { attempt_failures.push_back(why); };
    s.on_lost = [this](const std::string& channel, const std::string& error) {
      lost.emplace_back(channel, error);
    };
  }
};

} // namespace herald::test
