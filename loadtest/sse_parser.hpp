// Incremental Server-Sent Events parser (WHATWG HTML, "Server-sent events",
// section "Interpreting an event stream"), fed with whatever bytes a read
// returned. Lines end with CRLF, LF or CR, possibly split across reads.
// Only a partial line and the current event's fields are buffered, so the
// memory per connection stays around the size of one event.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace herald::loadtest {

/// One dispatched event. The views are valid only during the callback.
struct sse_event {
  std::string_view event; ///< event type; "message" when the stream named none
  std::string_view data;  ///< data lines joined by '\n'
  std::string_view id;    ///< last event id buffer (persists across events)
};

class sse_parser {
public:
  /// Parses `n` bytes at `p`, calling `on_event(const sse_event&)` for each
  /// complete event (a blank line after at least one data line). Comments,
  /// `retry:` and unknown fields are skipped. Never fails: any byte sequence
  /// is a valid (if useless) event stream.
  template <class OnEvent>
  void feed(const char* p, std::size_t n, OnEvent&& on_event) {
    const char* end = p + n;
    if (skip_lf_ && p < end) {
      skip_lf_ = false;
      if (*p == '\n')
        ++p;
    }
    while (p < end) {
      const char* eol = p;
      while (eol < end && *eol != '\n' && *eol != '\r')
        ++eol;
      if (eol == end) {
        line_.append(p, static_cast<std::size_t>(end - p));
        return;
      }
      bool ready;
      if (line_.empty()) {
        ready = on_line(std::string_view(p, static_cast<std::size_t>(eol - p)));
      } else {
        line_.append(p, static_cast<std::size_t>(eol - p));
        ready = on_line(line_);
        line_.clear();
      }
      if (*eol == '\r') {
        if (eol + 1 < end) {
          if (eol[1] == '\n')
            ++eol;
        } else {
          skip_lf_ = true;
        }
      }
      p = eol + 1;
      if (ready) {
        sse_event ev{event_.empty() ? std::string_view{"message"} : std::string_view{event_},
                     std::string_view{data_}, std::string_view{id_}};
        on_event(ev);
        data_.clear();
        event_.clear();
        has_data_ = false;
      }
    }
  }

  /// The last event id buffer: the `id:` of the latest event that had one
  /// (an SSE client sends it back as Last-Event-ID when it reconnects).
  const std::string& last_event_id() const noexcept { return id_; }
  /// Sets the last event id buffer (for a parser that continues a stream).
  void set_last_event_id(std::string id) { id_ = std::move(id); }
  /// Forgets any partial line and event; keeps the last event id.
  void reset_stream() noexcept;
  /// Heap bytes held by the parser's buffers.
  std::size_t capacity_bytes() const noexcept;

private:
  /// Interprets one complete line; true when it dispatches an event.
  bool on_line(std::string_view line);

  std::string line_;  // partial line carried over between reads
  std::string data_;  // data buffer of the event being read
  std::string event_; // event type buffer
  std::string id_;    // last event id buffer
  bool has_data_ = false;
  bool skip_lf_ = false; // the previous read ended with CR: a leading LF belongs to it
};

} // namespace herald::loadtest
