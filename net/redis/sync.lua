-- Herald's sync script (docs/cluster.md): a channel's epoch and head offset
-- (starting an epoch when the channel has none) and its history after an offset.
--
-- KEYS[1] <prefix>meta:<channel>, KEYS[2] <prefix>history:<channel>
-- ARGV[1] epoch to start when the channel has none
-- ARGV[2] offset to read after
-- ARGV[3] history ttl in seconds
-- Returns {epoch, offset, [[id, ["p", envelope]], ...]}.
if redis.call('HSETNX', KEYS[1], 'epoch', ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], 'offset', 0)
  redis.call('DEL', KEYS[2])
  redis.call('EXPIRE', KEYS[1], ARGV[3])
end
local m = redis.call('HMGET', KEYS[1], 'epoch', 'offset')
local entries = redis.call('XRANGE', KEYS[2], '(' .. ARGV[2] .. '-0', '+')
return {m[1], tonumber(m[2]), entries}
