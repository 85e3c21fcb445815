-- Herald's sync script (docs/cluster.md): a channel's epoch and head offset
-- (starting an epoch when the channel has none) and its history after an offset.
--
-- KEYS[1] <prefix>{<channel>}:meta, KEYS[2] <prefix>{<channel>}:history (one hash tag)
-- ARGV[1] epoch to start when the channel has none (or its history went backwards)
-- ARGV[2] offset to read after
-- ARGV[3] history ttl in seconds
-- ARGV[4] the epoch the caller knows ("" when none)
-- ARGV[5] the highest offset the caller delivered in that epoch
-- Returns {epoch, offset, [[id, ["p", envelope]], ...]}.
--
-- History that went backwards: when the channel is still in the caller's
-- epoch but its head is below what the caller delivered (Redis restored from
-- an older snapshot, a failover to a replica that missed the tail), the
-- offsets after the head would be issued again for other publications, and
-- clients holding them would drop those as duplicates. The channel moves to a
-- new epoch instead, in this atomic step: every instance and every cursor of
-- the old epoch then gets an explicit epoch_changed gap.
local m = redis.call('HMGET', KEYS[1], 'epoch', 'offset')
if m[1] and m[2] and ARGV[4] ~= '' and m[1] == ARGV[4] and tonumber(m[2]) < tonumber(ARGV[5]) then
  redis.call('DEL', KEYS[1])
end
if redis.call('HSETNX', KEYS[1], 'epoch', ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], 'offset', 0)
  redis.call('DEL', KEYS[2])
  redis.call('EXPIRE', KEYS[1], ARGV[3])
end
m = redis.call('HMGET', KEYS[1], 'epoch', 'offset')
local entries = redis.call('XRANGE', KEYS[2], '(' .. ARGV[2] .. '-0', '+')
return {m[1], tonumber(m[2]), entries}
