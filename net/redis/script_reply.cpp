#include "net/redis/script_reply.hpp"

#include "net/redis/envelope.hpp"

#include <algorithm>

namespace herald::net::redis {

namespace {
// The start of the error a WAIT that fell short gives (wait_for_replicas).
constexpr std::string_view not_replicated = "not replicated: ";
} // namespace

std::pair<std::size_t, std::chrono::seconds>
script_settings::history_of(std::string_view channel) const {
  if (!classes)
    return {history_size, history_ttl};
  const auto& c = classes->of(channel);
  return {c.history_size, c.history_ttl};
}

void publish_call(const script_settings& s, const std::string& channel,
                  const backend::publish_args& pub, const std::string& new_epoch,
                  std::vector<std::string>& keys, std::vector<std::string>& args) {
  auto k = keys_for(s.prefix, channel);
  keys = {k.meta, k.history};
  if (!pub.idempotency_key.empty())
    keys.push_back(idempotency_key_for(s.prefix, channel, pub.idempotency_key));
  const auto [size, ttl] = s.history_of(channel);
  args = {k.pubsub,
          channel,
          pub.event,
          pub.data,
          std::to_string(size),
          std::to_string(ttl.count()),
          new_epoch,
          std::to_string(s.idempotency_window.count()),
          s.sharded ? "SPUBLISH" : "PUBLISH",
          std::string{}, // ARGV[10]: tags (none)
          pub.version == 0 ? std::string{} : std::to_string(pub.version),
          pub.version_epoch};
}

void sync_call(const script_settings& s, const std::string& channel, std::uint64_t after,
               const std::string& epoch, std::uint64_t delivered, const std::string& new_epoch,
               std::vector<std::string>& keys, std::vector<std::string>& args) {
  auto k = keys_for(s.prefix, channel);
  keys = {k.meta, k.history};
  args = {new_epoch, std::to_string(after), std::to_string(s.history_of(channel).second.count()),
          epoch,
          std::to_string(delivered)};
}

const std::string probe_script =
  "redis.call('SET', KEYS[1], '1', 'PX', 1000) redis.call('SET', KEYS[2], '1', 'PX', 1000) "
  "return 1";

backend::publish_result to_probe_result(const reply& r) {
  backend::publish_result res;
  res.ok = !r.is_error();
  if (!res.ok) {
    res.error = r.str;
    res.refused = !r.is_disconnected();
  }
  return res;
}

bool refused_before_running(const reply& r) {
  // Redis checks these before it calls the command: the script never ran.
  // READONLY (and OOM) can also come from inside a script, at its first
  // write: nothing was written then either, but OOM follows a DEL that
  // needs no memory, so only READONLY is listed. NOPERM is left out: a
  // refused PUBLISH inside the script comes after its writes.
  static constexpr std::string_view codes[] = {"NOSCRIPT",    "MOVED",    "ASK",      "TRYAGAIN",
                                               "CLUSTERDOWN", "READONLY", "LOADING",  "MASTERDOWN",
                                               "BUSY",        "NOAUTH",   "CROSSSLOT"};
  if (!r.is_error() || r.is_disconnected())
    return false;
  for (auto code : codes)
    if (r.has_error_code(code))
      return true;
  return false;
}

backend::publish_result to_publish_result(reply r) {
  using outcome = backend::outcome;
  if (r.type == reply::array && (r.elements.size() == 2 || r.elements.size() == 3) &&
      r.elements[0].type == reply::string && r.elements[1].type == reply::integer &&
      r.elements[1].number > 0) {
    backend::publish_result res{
      true, {}, r.elements[0].str, static_cast<std::uint64_t>(r.elements[1].number)};
    // A third element: 1 an idempotent retry, 2 a stale version.
    res.duplicate = r.elements.size() == 3 && r.elements[2].number == 1;
    res.stale_version = r.elements.size() == 3 && r.elements[2].number == 2;
    res.what = outcome::stored;
    return res;
  }
  backend::publish_result res{
    false, r.is_error() ? r.str : "unexpected reply " + r.to_string(), {}, 0};
  const bool unreplicated = r.is_error() && r.str.rfind(not_replicated, 0) == 0;
  if (unreplicated) {
    res.what = outcome::not_replicated;
  } else if (r.is_disconnected()) {
    res.what = r.never_sent ? outcome::not_stored : outcome::unknown;
    res.error = r.never_sent ? "not sent: not connected to Redis"
                             : "no reply from Redis: the connection was lost or timed out "
                               "after the script was sent";
  } else {
    res.what = refused_before_running(r) ? outcome::not_stored : outcome::unknown;
  }
  // An error reply from a live connection: Redis refused the write. Not a
  // WAIT that fell short: the master took the write, and readiness (whose
  // probe does not WAIT) would only flap.
  res.refused = r.is_error() && !r.is_disconnected() && !unreplicated;
  return res;
}

backend::sync_result to_sync_result(reply r) {
  backend::sync_result res;
  if (r.type != reply::array || r.elements.size() != 3 || r.elements[0].type != reply::string ||
      r.elements[1].type != reply::integer || r.elements[2].type != reply::array) {
    res.error = r.is_error() ? r.str : "unexpected reply";
    return res;
  }
  res.ok = true;
  res.epoch = r.elements[0].str;
  res.head = static_cast<std::uint64_t>(std::max(0LL, r.elements[1].number));
  // Entries: [id, ["p", envelope]]
  for (auto& e : r.elements[2].elements) {
    if (e.type != reply::array || e.elements.size() != 2)
      continue;
    auto& fields = e.elements[1].elements;
    for (std::size_t k = 0; k + 1 < fields.size(); k += 2)
      if (fields[k].str == "p")
        res.envelopes.push_back(std::move(fields[k + 1].str));
  }
  return res;
}

void wait_for_replicas(connection& conn, std::size_t replicas, std::chrono::milliseconds timeout,
                       reply r, reply_fn done) {
  if (replicas == 0 || r.type != reply::array) {
    done(std::move(r));
    return;
  }
  conn.command({"WAIT", std::to_string(replicas), std::to_string(timeout.count())},
               [replicas, timeout, r = std::move(r), done = std::move(done)](reply w) mutable {
                 if (w.type == reply::integer && w.number >= 0 &&
                     static_cast<std::size_t>(w.number) >= replicas) {
                   done(std::move(r));
                   return;
                 }
                 // The script's reply came: the master stored it, whatever
                 // became of WAIT. Never passed on as the publish's own error.
                 const std::string at = r.elements.size() >= 2
                                          ? "offset " + std::to_string(r.elements[1].number) +
                                              " of epoch " + r.elements[0].str
                                          : r.to_string();
                 if (w.is_disconnected()) {
                   done(reply::make_error(std::string(not_replicated) + "WAIT got no reply (" +
                                          (w.never_sent ? "not sent: the connection was lost"
                                                        : "the connection was lost or timed out") +
                                          ") after the master stored it as " + at));
                   return;
                 }
                 if (w.is_error()) {
                   done(reply::make_error(std::string(not_replicated) + "WAIT failed (" + w.str +
                                          ") after the master stored it as " + at));
                   return;
                 }
                 done(reply::make_error(std::string(not_replicated) + std::to_string(w.number) +
                                        " of " + std::to_string(replicas) +
                                        " replicas confirmed the write within " +
                                        std::to_string(timeout.count()) + " ms (WAIT)"));
               });
}

} // namespace herald::net::redis
