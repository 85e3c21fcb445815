-- Herald's publish script (docs/cluster.md). Appends one publication to a
-- channel's history stream and publishes it on the channel's pub/sub
-- channel, in one atomic step; Redis assigns the offset.
--
-- Every name of a channel starts with <prefix>{<channel>}: one Redis Cluster
-- hash tag, so the script runs on the node that owns the channel's slot.
-- KEYS[1] <prefix>{<channel>}:meta     hash {epoch, offset}
-- KEYS[2] <prefix>{<channel>}:history  stream, entry id <offset>-0, field p = envelope
-- ARGV[1] <prefix>{<channel>}:pub      pub/sub channel
-- ARGV[2] channel name (validated by the caller)
-- ARGV[3] event name (1-64 of [A-Za-z0-9_.:-], not starting with "herald.")
-- ARGV[4] data: JSON text (inserted as is: it must be valid JSON)
-- ARGV[5] history size (stream MAXLEN)
-- ARGV[6] history ttl in seconds (key expiry after the last publication)
-- ARGV[7] epoch to start when the channel has none (1-32 of [a-z0-9])
-- ARGV[8] idempotency window in seconds (used with KEYS[3])
-- KEYS[3] optional: <prefix>{<channel>}:idem:<idempotency key>
-- ARGV[9] 'SPUBLISH' on a Redis Cluster (sharded pub/sub: only the nodes of
--         the channel's shard get it); 'PUBLISH' (or absent): classic PUBLISH
--         (standalone Redis)
-- ARGV[10] tags: '' (reserved)
-- ARGV[11] version: '' for none, else the decimal digits of 1 to 2^64-1
-- ARGV[12] version epoch ('' for none)
-- Returns {epoch, offset}, or {epoch, offset, 1} when KEYS[3] names a key
-- stored within the window: the first publication's position; nothing is
-- stored or published again (a publisher's retry); or {epoch, offset, 2}
-- when ARGV[11] is not above the channel's version (meta fields `version`,
-- `version_epoch`) in the same version epoch: the channel's position,
-- nothing stored or published (a stale state).
--
-- The epoch lives as long as the channel's keys: both expire ARGV[6] seconds
-- after the last publication, and the next publication starts a new epoch, so
-- an old cursor gets an explicit gap instead of offsets that mean something else.
if KEYS[3] then
  local first = redis.call('GET', KEYS[3])
  if first then
    local sep = string.find(first, ' ', 1, true)
    return {string.sub(first, 1, sep - 1), tonumber(string.sub(first, sep + 1)), 1}
  end
end
-- Versions are compared as decimal strings (no leading zeros): Lua's numbers
-- are doubles, exact only up to 2^53.
local function above(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
if ARGV[11] and ARGV[11] ~= '' then
  local m = redis.call('HMGET', KEYS[1], 'epoch', 'offset', 'version', 'version_epoch')
  if m[1] and m[3] and (m[4] or '') == (ARGV[12] or '') and not above(ARGV[11], m[3]) then
    return {m[1], tonumber(m[2]), 2}
  end
end
local epoch = redis.call('HGET', KEYS[1], 'epoch')
if not epoch then
  epoch = ARGV[7]
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[1], 'epoch', epoch, 'offset', 0)
end
local offset = redis.call('HINCRBY', KEYS[1], 'offset', 1)
if ARGV[11] and ARGV[11] ~= '' then
  redis.call('HSET', KEYS[1], 'version', ARGV[11], 'version_epoch', ARGV[12] or '')
end
local env = '{"channel":' .. cjson.encode(ARGV[2]) .. ',"epoch":' .. cjson.encode(epoch) ..
            ',"offset":' .. offset .. ',"event":' .. cjson.encode(ARGV[3]) ..
            ',"data":' .. ARGV[4] .. '}'
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[5], offset .. '-0', 'p', env)
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('EXPIRE', KEYS[2], ARGV[6])
if ARGV[9] == 'SPUBLISH' then
  redis.call('SPUBLISH', ARGV[1], env)
else
  redis.call('PUBLISH', ARGV[1], env)
end
if KEYS[3] then
  redis.call('SET', KEYS[3], epoch .. ' ' .. offset, 'EX', ARGV[8])
end
return {epoch, offset}
