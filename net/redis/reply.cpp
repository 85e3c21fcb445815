#include "net/redis/reply.hpp"

#include <hiredis/hiredis.h>

namespace herald::net::redis {

bool reply::has_error_code(std::string_view code) const noexcept {
  if (type != error || str.size() < code.size())
    return false;
  if (std::string_view(str).substr(0, code.size()) != code)
    return false;
  return str.size() == code.size() || str[code.size()] == ' ';
}

reply reply::disconnected() {
  return make_error(std::string(disconnected_text));
}

reply reply::not_sent() {
  reply r = disconnected();
  r.never_sent = true;
  return r;
}

reply reply::make_error(std::string text) {
  reply r;
  r.type = error;
  r.str = std::move(text);
  return r;
}

std::string reply::to_string() const {
  switch (type) {
  case nil:
    return "nil";
  case integer:
    return std::to_string(number);
  case string:
    return "\"" + str + "\"";
  case status:
    return "+" + str;
  case error:
    return "-" + str;
  case array: {
    std::string s = "[";
    for (std::size_t i = 0; i < elements.size(); ++i) {
      if (i > 0)
        s += ",";
      s += elements[i].to_string();
    }
    return s + "]";
  }
  }
  return "?";
}

reply copy_reply(const redisReply& r) {
  reply out;
  switch (r.type) {
  case REDIS_REPLY_STRING:
  case REDIS_REPLY_STATUS:
  case REDIS_REPLY_ERROR: // the three kinds of text
    out.type = r.type == REDIS_REPLY_STRING   ? reply::string
               : r.type == REDIS_REPLY_STATUS ? reply::status
                                              : reply::error;
    out.str.assign(r.str, r.len);
    break;
  case REDIS_REPLY_INTEGER:
    out.type = reply::integer;
    out.number = r.integer;
    break;
  case REDIS_REPLY_ARRAY:
    out.type = reply::array;
    out.elements.reserve(r.elements);
    for (std::size_t i = 0; i < r.elements; ++i)
      out.elements.push_back(r.element[i] != nullptr ? copy_reply(*r.element[i]) : reply{});
    break;
  default: // REDIS_REPLY_NIL (also a nil array)
    out.type = reply::nil;
    break;
  }
  return out;
}

} // namespace herald::net::redis
