#include "loadtest/sse_parser.hpp"

namespace herald::loadtest {

bool sse_parser::on_line(std::string_view line) {
  if (line.empty()) {
    if (!has_data_)
      event_.clear(); // nothing to dispatch; the event type does not carry over
    return has_data_;
  }
  if (line.front() == ':')
    return false; // comment (heartbeat)
  std::string_view field = line;
  std::string_view value;
  if (auto colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ')
      value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_)
      data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  } else if (field == "event") {
    event_.assign(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos)
      id_.assign(value);
  }
  // "retry" and unknown fields are ignored.
  return false;
}

void sse_parser::reset_stream() noexcept {
  line_.clear();
  data_.clear();
  event_.clear();
  has_data_ = false;
  skip_lf_ = false;
}

std::size_t sse_parser::capacity_bytes() const noexcept {
  return line_.capacity() + data_.capacity() + event_.capacity() + id_.capacity();
}

} // namespace herald::loadtest
