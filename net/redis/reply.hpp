// reply: an owned copy of a Redis (RESP2) reply. A hiredis redisReply is
// only valid inside the callback it is passed to; redis::connection copies
// it into this value type there, so replies can be moved to other threads
// and actors. Pure value type, no hiredis needed to use it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

struct redisReply;

namespace herald::net::redis {

struct reply {
  /// The RESP2 reply types hiredis 0.14 knows.
  enum kind { nil, integer, string, status, error, array };

  /// The text of the error reply that stands for "the connection was lost
  /// (or stopped, or timed out) before the reply arrived".
  static constexpr std::string_view disconnected_text = "disconnected";

  kind type = nil;
  long long number = 0;        ///< the value of an integer reply
  std::string str;             ///< bulk string, status or error text (binary-safe)
  std::vector<reply> elements; ///< the elements of an array reply
  /// Only for a disconnected() reply: true when the command was never
  /// written to Redis (not connected, or the connection went before its
  /// bytes left), so Redis certainly did not run it (not_sent()). False
  /// when it was written: it may have run, only its reply is missing.
  bool never_sent = false;

  /// Nil bulk string or nil array (GET of a missing key, BLPOP timeout).
  bool is_nil() const noexcept { return type == nil; }
  /// Any error reply, including disconnected().
  bool is_error() const noexcept { return type == error; }
  /// True for the error reply made by disconnected() or not_sent().
  bool is_disconnected() const noexcept { return type == error && str == disconnected_text; }
  /// True for an error reply whose text starts with `code` followed by a
  /// space or the end (for example has_error_code("NOSCRIPT")).
  bool has_error_code(std::string_view code) const noexcept;

  /// The reply every pending callback gets when the connection goes away:
  /// kind error with the text "disconnected". A Lua script could forge it
  /// with redis.error_reply("disconnected"); Redis itself never sends it.
  static reply disconnected();
  /// disconnected() for a command that never reached Redis: never_sent true.
  static reply not_sent();
  /// An error reply with `text`.
  static reply make_error(std::string text);

  /// Debug form: nil, 42, "bulk", +status, -error, [a,[b,c]].
  std::string to_string() const;
};

/// Deep copy of a hiredis reply (any nesting). Binary-safe. Call it only
/// inside the callback that received `r`.
reply copy_reply(const redisReply& r);

} // namespace herald::net::redis
