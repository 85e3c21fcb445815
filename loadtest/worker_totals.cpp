#include "loadtest/worker_totals.hpp"

namespace herald::loadtest {

void worker_totals::add(const nlohmann::json& p) {
  if (!p.is_object())
    return;
  // Each count adds the field of its name (0 when absent).
  using count = std::uint64_t worker_totals::*;
  static const std::pair<const char*, count> connection_counts[] = {
    {"attempted", &worker_totals::attempted}, {"established", &worker_totals::established},
    {"failed", &worker_totals::failed},       {"open", &worker_totals::open},
    {"dropped", &worker_totals::dropped},     {"resuming", &worker_totals::resuming},
    {"resumed", &worker_totals::resumed},     {"resume_failed", &worker_totals::resume_failed}};
  static const std::pair<const char*, count> delivery_counts[] = {
    {"received", &worker_totals::received},       {"duplicates", &worker_totals::duplicates},
    {"out_of_order", &worker_totals::out_of_order}, {"offset_gaps", &worker_totals::offset_gaps},
    {"gap_notices", &worker_totals::gap_notices}, {"unparsed", &worker_totals::unparsed},
    {"bytes", &worker_totals::bytes}};
  for (const auto& [name, field] : connection_counts)
    this->*field += p.value(name, std::uint64_t{0});
  cpu_s += p.value("cpu_s", 0.0);
  if (!p.contains("counters"))
    return;
  const auto& c = p["counters"];
  for (const auto& [name, field] : delivery_counts)
    this->*field += c.value(name, std::uint64_t{0});
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
