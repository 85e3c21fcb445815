#include "loadtest/worker_totals.hpp"

namespace herald::loadtest {

void worker_totals::add(const nlohmann::json& p) {
  if (!p.is_object())
    return;
  auto u = [&](const char* k) { return p.value(k, std::uint64_t{0}); };
  attempted += u("attempted");
  established += u("established");
  failed += u("failed");
  open += u("open");
  dropped += u("dropped");
  resuming += u("resuming");
  resumed += u("resumed");
  resume_failed += u("resume_failed");
  cpu_s += p.value("cpu_s", 0.0);
  if (!p.contains("counters"))
    return;
  const auto& c = p["counters"];
  auto cu = [&](const char* k) { return c.value(k, std::uint64_t{0}); };
  received += cu("received");
  duplicates += cu("duplicates");
  out_of_order += cu("out_of_order");
  offset_gaps += cu("offset_gaps");
  gap_notices += cu("gap_notices");
  unparsed += cu("unparsed");
  bytes += cu("bytes");
  auto first = c.value("first_recv_ns", std::int64_t{0});
  if (first && (first_recv_ns == 0 || first < first_recv_ns))
    first_recv_ns = first;
  last_recv_ns = std::max(last_recv_ns, c.value("last_recv_ns", std::int64_t{0}));
}

worker_totals sum_latest(const std::vector<worker_view>& views) {
  worker_totals t;
  for (const auto& v : views)
    t.add(v.result.is_null() ? v.progress : v.result);
  return t;
}

worker_totals sum_snapshot(const std::vector<worker_view>& views, int id) {
  worker_totals t;
  for (const auto& v : views)
    if (auto it = v.snapshots.find(id); it != v.snapshots.end())
      t.add(it->second);
  return t;
}

} // namespace herald::loadtest
