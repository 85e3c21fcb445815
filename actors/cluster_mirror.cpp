#include "actors/cluster_mirror.hpp"

#include <algorithm>

namespace herald::actors {

bool cluster_mirror::watch() {
  if (watching_)
    return false;
  watching_ = true;
  return true;
}

bool cluster_mirror::unwatch(channel_log& log) {
  if (!watching_)
    return false;
  watching_ = synced_ = sync_again_ = false;
  log.history.clear();
  held_.clear();
  return true;
}

std::optional<sync_request> cluster_mirror::on_watching(const channel_log& log) {
  if (!watching_)
    return std::nullopt;
  return request_sync(log);
}

std::optional<sync_request> cluster_mirror::request_sync(const channel_log& log) {
  if (syncing_) {
    sync_again_ = true;
    return std::nullopt;
  }
  syncing_ = true;
  sync_after_ = synced_ ? log.offset : 0;
  // Our position goes along: Redis moves the channel to a new epoch if its
  // head went back behind what we delivered.
  if (!stale_epoch_.empty())
    return sync_request{sync_after_, stale_epoch_, stale_delivered_};
  return sync_request{sync_after_, log.epoch, log.offset};
}

void cluster_mirror::retire(const channel_log& log) {
  if (log.epoch.empty())
    return;
  auto it = std::find_if(retired_.begin(), retired_.end(),
                         [&](const auto& r) { return r.first == log.epoch; });
  if (it != retired_.end())
    retired_.erase(it);
  retired_.emplace_back(log.epoch, log.offset);
  if (retired_.size() > max_retired_epochs)
    retired_.erase(retired_.begin());
}

cluster_mirror::step cluster_mirror::on_synced(sync_result& res, channel_log& log) {
  step out;
  syncing_ = false;
  if (!watching_)
    return out; // nobody listens any more
  if (!res.ok) {
    // Redis (or just the command connections) went away meanwhile. Try again
    // shortly: the subscriber may already be back, and then no new watch
    // confirmation would come to trigger it.
    out.retry_later = true;
    out.error = std::move(res.error);
    return out;
  }
  stale_epoch_.clear();
  if (res.epoch != log.epoch) {
    auto old = std::find_if(retired_.begin(), retired_.end(),
                            [&](const auto& r) { return r.first == res.epoch; });
    if (old != retired_.end()) {
      // An epoch we left is back: its offsets up to what we delivered were
      // issued for other publications. "Delivered" above its head makes the
      // sync script move the channel to a new epoch.
      out.restored_epoch = res.epoch;
      stale_epoch_ = res.epoch;
      stale_delivered_ = std::max(old->second, res.head + 1);
      synced_ = false;
      out.sync = request_sync(log);
      return out;
    }
    if (sync_after_ > 0) {
      // We asked for what follows our offset in an epoch that is gone: read
      // the new epoch from its start.
      synced_ = false;
      out.sync = request_sync(log);
      return out;
    }
    retire(log);
    log.restart(res.epoch);
  }
  auto take = [&](publication_ptr p) {
    if (p->epoch == log.epoch && p->offset > log.offset) {
      log.append(p);
      out.applied.push_back(std::move(p));
    }
  };
  for (auto& p : res.entries)
    take(std::move(p));
  for (auto& [off, p] : held_)
    take(std::move(p));
  held_.clear();
  if (res.head > log.offset)
    log.offset = res.head; // entries trimmed away: subscribers see the jump as a gap
  synced_ = true;
  out.became_ready = true;
  if (sync_again_) {
    sync_again_ = false;
    out.sync = request_sync(log);
  }
  return out;
}

cluster_mirror::step cluster_mirror::on_remote(const publication_ptr& p, channel_log& log) {
  step out;
  if (!watching_)
    return out;
  if (!synced_ || syncing_) {
    held_.emplace(p->offset, p);
    return out;
  }
  if (p->epoch != log.epoch) {
    // The channel's history was lost in Redis and a new epoch began.
    held_.emplace(p->offset, p);
    synced_ = false;
    out.sync = request_sync(log);
    return out;
  }
  if (p->offset <= log.offset) {
    // Already have it, normally (the sync read it from the stream). If what
    // we hold at that offset is another publication, or we cannot tell, the
    // channel's history in Redis may have gone backwards and offsets are
    // being issued again: a sync compares Redis's head with what we
    // delivered and moves the channel to a new epoch if so.
    if (!log.holds(*p))
      out.sync = request_sync(log);
    return out;
  }
  if (p->offset > log.offset + 1) {
    // Publications went missing on the way (Redis away, pub/sub dropped):
    // fill the gap from the stream before going on.
    held_.emplace(p->offset, p);
    out.sync = request_sync(log);
    return out;
  }
  log.append(p);
  out.applied.push_back(p);
  return out;
}

} // namespace herald::actors
