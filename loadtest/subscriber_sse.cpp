// The subscriber's SSE side (transport::sse): the request (GET /v1/sse, with
// Last-Event-ID when resuming), and each event of the stream (WHATWG HTML
// "Server-sent events", docs/protocol.md). Herald's `id:` is the cursor: one
// offset per channel, which tells which of our channels a publication that
// lists several was delivered for; `herald.gap` notices move the positions.
#include "loadtest/subscriber.hpp"

namespace herald::loadtest {

std::string subscriber::sse_request() const {
  std::string r = "GET /v1/sse?";
  for (std::size_t i = 0; i < tracks_.size(); ++i) {
    if (i)
      r += '&';
    r += "channel=";
    r += channel_name(tracks_[i]);
  }
  if (spec_.filter)
    r += "&event=loadtest";
  r += " HTTP/1.1\r\nHost: ";
  r += spec_.host;
  r += "\r\nAccept: text/event-stream\r\n";
  if (resume_ && !sse_.last_event_id().empty()) {
    r += "Last-Event-ID: ";
    r += sse_.last_event_id();
    r += "\r\n";
  }
  r += "\r\n";
  return r;
}

void subscriber::update_from_cursor(std::string_view cursor) {
  for_each_cursor_entry(cursor, [&](const cursor_entry& e) {
    for (auto& t : tracks_) {
      if (ctx_.channel_hashes[static_cast<std::size_t>(t.id)] != e.hash)
        continue;
      if (!t.offset_known || e.offset != t.last_offset)
        t.restart_at(e.offset);
    }
  });
}

void subscriber::on_sse_event(const sse_event& ev, std::int64_t now) {
  if (ev.event.substr(0, 7) == "herald.") {
    if (ev.event == "herald.gap") {
      ++ctx_.counters.gap_notices;
      auto r = ev.data.find("\"reason\":\"");
      std::string reason = "unknown";
      if (r != std::string_view::npos) {
        auto v = ev.data.substr(r + 10);
        reason = std::string{v.substr(0, v.find('"'))};
      }
      ++ctx_.notices["sse herald.gap " + reason];
      // A gap moves the positions the server holds for us.
      update_from_cursor(ev.id);
    }
    return;
  }
  pub_fields f;
  if (!scan_pub_fields(ev.data, f)) {
    ++ctx_.counters.unparsed;
    return;
  }
  // Positions in the cursor, per track.
  std::uint64_t cur_off[8] = {};
  bool present[8] = {};
  for_each_cursor_entry(ev.id, [&](const cursor_entry& e) {
    for (std::size_t i = 0; i < tracks_.size() && i < 8; ++i)
      if (ctx_.channel_hashes[static_cast<std::size_t>(tracks_[i].id)] == e.hash) {
        cur_off[i] = e.offset;
        present[i] = true;
      }
  });
  // The publication lists its channels; when it concerns several of ours,
  // the cursor entry that moved tells which one this delivery is for.
  std::size_t cand[8];
  std::size_t nc = 0;
  for (std::size_t i = 0; i < tracks_.size() && i < 8; ++i)
    if (f.lists(tracks_[i].id))
      cand[nc++] = i;
  if (nc == 0) // a server that ignores channels (the baseline): the first one
    cand[nc++] = 0;
  std::size_t chosen = cand[0];
  if (nc > 1) {
    bool found = false;
    for (std::size_t k = 0; k < nc && !found; ++k) {
      auto& t = tracks_[cand[k]];
      if (present[cand[k]] && t.offset_known && cur_off[cand[k]] > t.last_offset) {
        chosen = cand[k];
        found = true;
      }
    }
    for (std::size_t k = 0; k < nc && !found; ++k)
      if (!tracks_[cand[k]].offset_known) {
        chosen = cand[k];
        found = true;
      }
  }
  on_publication(tracks_[chosen], present[chosen], cur_off[chosen], f, now);
}

} // namespace herald::loadtest
