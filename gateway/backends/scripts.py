"""The Lua scripts of the Redis ingress backend. Each is registered once per connection.

Every key one script touches shares the hash tag `{<prefix>:s<shard>}`, so a script runs on one
Redis Cluster slot. The `#!lua` shebang (no flags) makes Redis refuse the whole script under
maxmemory pressure *before* it runs, and the scripts check everything before their first write
(SUBMIT's de-dup marker is checked and set by one SET NX GET), so an error or a refusal leaves
no half-done state. Time comes from Redis itself (TIME), so every
process shares one clock; Redis 7 replicates script effects, which TIME requires.
"""

from __future__ import annotations

import hashlib

# Shared helpers, pasted at the top of each script.
#
# A rolling window is a list of Redis-clock timestamps (ms), newest first. It is full when its
# limit-th newest entry is still inside the window, and that entry's age says when a slot frees
# up: one LINDEX answers both. Lists are trimmed lazily (at twice the limit, down to the limit;
# only the newest `limit` entries ever matter), so an append is usually LPUSH + PEXPIRE.
_HELPERS = """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- nil while the window has room, else the time (ms) at which it will have room again
local function full_until(key, limit, floor, window)
  local nth = redis.call('LINDEX', key, limit - 1)
  if nth and tonumber(nth) > floor then return tonumber(nth) + window end
  return nil
end
local function window_push(key, now, window, limit)
  if redis.call('LPUSH', key, now) > 2 * limit then redis.call('LTRIM', key, 0, limit - 1) end
  redis.call('PEXPIRE', key, window)
end
-- rejected and duplicate records are logged up to `limit` per window, beyond that only counted
local function log_capped(rej, dropped, stream, floor, window, limit, now, fields)
  if full_until(rej, limit, floor, window) then
    redis.call('INCR', dropped)
    redis.call('EXPIRE', dropped, 604800)
    return
  end
  redis.call('XADD', stream, '*', unpack(fields))
  window_push(rej, now, window, limit)
end
"""

SUBMIT_SCRIPT = (
    "#!lua\n"
    """
-- SUBMIT: one authenticated delivery, one round trip.
-- KEYS: 1 version, 2 rate window, 3 reject-log window, 4 shard stream, 5 dropped-log counter,
--       6 auth-failures(webhook, source), 7 seen(identity),
--       8 (large bodies only) the body, SET by the command pipelined just before this one
-- ARGV: 1 auth-failure limit, 2 rate limit, 3 window ms, 4 reject-log limit,
--       5 de-dup ttl seconds, 6 webhook uid, 7 config version held,
--       8 new delivery id, 9 '1' if body is JSON, 10 size, 11 body ('' if in KEYS[8]),
--       12 identity
-- (Per-webhook keys and arguments come first, per-request ones last: the client sends the
-- first part pre-encoded, see redis.py.)
-- A large body stays out of the Lua VM: copying it in and out of Lua costs far more than the
-- stream append. Accepted, its key loses the orphan TTL and the stream entry names it ('k');
-- refused, the key is deleted. A missing key (the SET failed) refuses with NOBODY first.
-- Returns: {'STALE'} | {'NOBODY'} | {'AUTHLIMIT', retry_ms} | {'RATE', retry_ms} | {'BADJSON'}
--          | {'DUP', first delivery id} | {'OK', delivery id}
"""
    + _HELPERS
    + """
local body_key = KEYS[8]
local shared = redis.call('GET', KEYS[1])
if shared and tonumber(shared) > tonumber(ARGV[7]) then
  if body_key then redis.call('DEL', body_key) end
  return {'STALE'}
end
if body_key and redis.call('EXISTS', body_key) == 0 then return {'NOBODY'} end
local now = now_ms()
local window = tonumber(ARGV[3])
local floor = now - window
local id, uid, size = ARGV[8], ARGV[6], ARGV[10]
local function reject(label, extra)
  if body_key then redis.call('DEL', body_key) end
  local fields = {'d', id, 'w', uid, 't', now, 'n', size, 'l', label}
  for _, v in ipairs(extra) do fields[#fields + 1] = v end
  log_capped(KEYS[3], KEYS[5], KEYS[4], floor, window, tonumber(ARGV[4]), now, fields)
end
local auth_limit = tonumber(ARGV[1])
local free_at = full_until(KEYS[6], auth_limit, floor, window)
if free_at then
  reject('Rejected (rate limited)', {})
  return {'AUTHLIMIT', free_at - now}
end
local rate = tonumber(ARGV[2])
free_at = full_until(KEYS[2], rate, floor, window)
if free_at then
  reject('Rejected (rate limited)', {})
  return {'RATE', free_at - now}
end
if ARGV[9] ~= '1' then
  reject('Rejected (invalid JSON)', {})
  window_push(KEYS[2], now, window, rate)
  return {'BADJSON'}
end
-- checked and set in one command; every check that could refuse the delivery is behind us
local first = redis.call('SET', KEYS[7], id, 'NX', 'GET', 'EX', tonumber(ARGV[5]))
if first then
  reject('Duplicate', {'i', ARGV[12], 'f', first})
  window_push(KEYS[2], now, window, rate)
  return {'DUP', first}
end
if body_key then
  redis.call('PERSIST', body_key)
  redis.call('XADD', KEYS[4], '*', 'd', id, 'w', uid, 't', now, 'n', size, 'l', 'Accepted',
             'i', ARGV[12], 'k', body_key)
else
  redis.call('XADD', KEYS[4], '*', 'd', id, 'w', uid, 't', now, 'n', size, 'l', 'Accepted',
             'i', ARGV[12], 'p', ARGV[11])
end
window_push(KEYS[2], now, window, rate)
return {'OK', id}
"""
)

AUTH_FAILED_SCRIPT = (
    "#!lua\n"
    """
-- AUTH_FAILED: count one failed authentication of (webhook, source) and log it.
-- KEYS: 1 version, 2 auth-failures(webhook, source), 3 reject-log window, 4 shard stream,
--       5 dropped-log counter
-- ARGV: 1 config version held, 2 auth-failure limit, 3 window ms, 4 reject-log limit,
--       5 new delivery id, 6 webhook uid, 7 size
-- Returns: {'STALE'} | {'AUTHLIMIT', retry_ms} | {'DENIED'}
"""
    + _HELPERS
    + """
local shared = redis.call('GET', KEYS[1])
if shared and tonumber(shared) > tonumber(ARGV[1]) then return {'STALE'} end
local now = now_ms()
local window = tonumber(ARGV[3])
local floor = now - window
local limit = tonumber(ARGV[2])
local fields = {'d', ARGV[5], 'w', ARGV[6], 't', now, 'n', ARGV[7], 'l', 'Rejected (auth)'}
local free_at = full_until(KEYS[2], limit, floor, window)
if free_at then
  fields[10] = 'Rejected (rate limited)'
  log_capped(KEYS[3], KEYS[5], KEYS[4], floor, window, tonumber(ARGV[4]), now, fields)
  return {'AUTHLIMIT', free_at - now}
end
window_push(KEYS[2], now, window, limit)
log_capped(KEYS[3], KEYS[5], KEYS[4], floor, window, tonumber(ARGV[4]), now, fields)
return {'DENIED'}
"""
)

LOG_REJECTION_SCRIPT = (
    "#!lua\n"
    """
-- LOG_REJECTION: log a rejection decided before authentication (too large), capped.
-- KEYS: 1 reject-log window, 2 shard stream, 3 dropped-log counter
-- ARGV: 1 window ms, 2 reject-log limit, 3 new delivery id, 4 webhook uid, 5 size, 6 label
-- Returns: 1
"""
    + _HELPERS
    + """
local now = now_ms()
local window = tonumber(ARGV[1])
local fields = {'d', ARGV[3], 'w', ARGV[4], 't', now, 'n', ARGV[5], 'l', ARGV[6]}
log_capped(KEYS[1], KEYS[3], KEYS[2], now - window, window, tonumber(ARGV[2]), now, fields)
return 1
"""
)

PUBLISH_VERSION_SCRIPT = """
-- PUBLISH_VERSION: raise a webhook's shared config version, never lower it.
-- KEYS: 1 version   ARGV: 1 new version   Returns: the stored version
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local new = tonumber(ARGV[1])
if new > current then redis.call('SET', KEYS[1], new); return new end
return current
"""


def sha1(script: str) -> str:
    return hashlib.sha1(script.encode(), usedforsecurity=False).hexdigest()
