"""The Lua scripts of the Redis ingress backend. Each is registered once per connection.

Every key one script touches shares the hash tag `{<prefix>:s<shard>}`, so a script runs on one
Redis Cluster slot. The `#!lua` shebang (no flags) makes Redis refuse the whole script under
maxmemory pressure *before* it runs, and the scripts check everything before their first write,
so an error or a refusal leaves no half-done state. Time comes from Redis itself (TIME), so every
process shares one clock; Redis 7 replicates script effects, which TIME requires.
"""

from __future__ import annotations

import hashlib

# Shared helpers, pasted at the top of each script.
_HELPERS = """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- ms until the window holds fewer than `limit` entries again
local function retry_ms(key, floor, window, limit, now)
  local n = redis.call('ZCOUNT', key, '(' .. floor, '+inf')
  local first = redis.call('ZRANGEBYSCORE', key, '(' .. floor, '+inf', 'WITHSCORES',
                           'LIMIT', n - limit, 1)
  return tonumber(first[2]) + window - now
end
local function window_add(key, floor, window, member, now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', floor)
  redis.call('ZADD', key, now, member)
  redis.call('PEXPIRE', key, window)
end
-- rejected and duplicate records are logged up to `limit` per window, beyond that only counted
local function log_capped(rej, dropped, stream, floor, window, limit, now, fields)
  if redis.call('ZCOUNT', rej, '(' .. floor, '+inf') >= limit then
    redis.call('INCR', dropped)
    redis.call('EXPIRE', dropped, 604800)
    return
  end
  redis.call('XADD', stream, '*', unpack(fields))
  window_add(rej, floor, window, fields[2], now)
end
"""

SUBMIT_SCRIPT = (
    "#!lua\n"
    """
-- SUBMIT: one authenticated delivery, one round trip.
-- KEYS: 1 version, 2 rate window, 3 reject-log window, 4 shard stream, 5 dropped-log counter,
--       6 auth-failures(webhook, source), 7 seen(identity)
-- ARGV: 1 auth-failure limit, 2 rate limit, 3 window ms, 4 reject-log limit,
--       5 de-dup ttl seconds, 6 webhook uid, 7 config version held,
--       8 new delivery id, 9 '1' if body is JSON, 10 size, 11 body, 12 identity
-- (Per-webhook keys and arguments come first, per-request ones last: the client sends the
-- first part pre-encoded, see redis.py.)
-- Returns: {'STALE'} | {'AUTHLIMIT', retry_ms} | {'RATE', retry_ms} | {'BADJSON'}
--          | {'DUP', first delivery id} | {'OK', delivery id}
"""
    + _HELPERS
    + """
local shared = redis.call('GET', KEYS[1])
if shared and tonumber(shared) > tonumber(ARGV[7]) then return {'STALE'} end
local now = now_ms()
local window = tonumber(ARGV[3])
local floor = now - window
local id, uid, size = ARGV[8], ARGV[6], ARGV[10]
local function reject(label, extra)
  local fields = {'d', id, 'w', uid, 't', now, 'n', size, 'l', label}
  for _, v in ipairs(extra) do fields[#fields + 1] = v end
  log_capped(KEYS[3], KEYS[5], KEYS[4], floor, window, tonumber(ARGV[4]), now, fields)
end
local auth_limit = tonumber(ARGV[1])
if redis.call('ZCOUNT', KEYS[6], '(' .. floor, '+inf') >= auth_limit then
  reject('Rejected (rate limited)', {})
  return {'AUTHLIMIT', retry_ms(KEYS[6], floor, window, auth_limit, now)}
end
local rate = tonumber(ARGV[2])
if redis.call('ZCOUNT', KEYS[2], '(' .. floor, '+inf') >= rate then
  reject('Rejected (rate limited)', {})
  return {'RATE', retry_ms(KEYS[2], floor, window, rate, now)}
end
if ARGV[9] ~= '1' then
  reject('Rejected (invalid JSON)', {})
  window_add(KEYS[2], floor, window, id, now)
  return {'BADJSON'}
end
local first = redis.call('GET', KEYS[7])
if first then
  reject('Duplicate', {'i', ARGV[12], 'f', first})
  window_add(KEYS[2], floor, window, id, now)
  return {'DUP', first}
end
redis.call('XADD', KEYS[4], '*', 'd', id, 'w', uid, 't', now, 'n', size, 'l', 'Accepted',
           'i', ARGV[12], 'p', ARGV[11])
window_add(KEYS[2], floor, window, id, now)
redis.call('SET', KEYS[7], id, 'EX', tonumber(ARGV[5]))
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
if redis.call('ZCOUNT', KEYS[2], '(' .. floor, '+inf') >= limit then
  fields[10] = 'Rejected (rate limited)'
  log_capped(KEYS[3], KEYS[5], KEYS[4], floor, window, tonumber(ARGV[4]), now, fields)
  return {'AUTHLIMIT', retry_ms(KEYS[2], floor, window, limit, now)}
end
window_add(KEYS[2], floor, window, ARGV[5], now)
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
