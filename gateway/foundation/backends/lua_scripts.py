"""The Lua scripts of the Redis ingress backend. Each is registered once per connection.

Every key one script touches shares the hash tag `{<prefix>:s<shard>}`, except the backlog
counter `{<prefix>}:backlog`: one count of the entries waiting in all 16 streams, so that
GATEWAY_MAX_BACKLOG is exact. The `#!lua` shebang (no flags) makes Redis refuse the whole script
under maxmemory pressure *before* it runs, and the scripts check everything before their first write
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
# only the newest `limit` entries ever matter).
#
# The writes a call would repeat for each delivery it carries are gathered and made once, by
# `flush()` at its end: the timestamps pushed onto each window (all `now`: one LPUSH and one
# PEXPIRE a window) and what each backlog counter gained (one INCRBY). The reads before the end
# see them as made, so every delivery of a call gets the answer it would get alone.
_HELPERS = """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local now = now_ms()
local pushes = {}    -- window key -> {n = timestamps not pushed yet, window = ms, limit = n}
local backlogs = {}  -- backlog counter -> {count = as read, added = entries added, limit = n}
-- nil while the window has room, else the time (ms) at which it will have room again
local function full_until(key, limit, floor, window)
  local waiting = pushes[key]
  local n = waiting and waiting.n or 0
  if n >= limit then return now + window end
  local nth = redis.call('LINDEX', key, limit - 1 - n)
  if nth and tonumber(nth) > floor then return tonumber(nth) + window end
  return nil
end
local function window_push(key, window, limit)
  local waiting = pushes[key]
  if not waiting then
    waiting = {n = 0}
    pushes[key] = waiting
  end
  waiting.n = waiting.n + 1
  waiting.window = window
  waiting.limit = limit
end
-- the counter of entries waiting in the streams for the evaluator, read once a call
local function backlog_of(key, max_backlog)
  local backlog = backlogs[key]
  if not backlog then
    backlog = {count = tonumber(redis.call('GET', key) or '0'), added = 0}
    backlogs[key] = backlog
  end
  backlog.limit = tonumber(max_backlog)
  return backlog
end
local function backlog_full(backlog)
  return backlog.count + backlog.added >= backlog.limit
end
-- a refusal not logged as a record, counted per webhook and reason in the shard's hash of
-- them (`uid reason` -> count, `uid reason <` / `>` -> first / last ms), which the evaluator
-- takes for its `delivery.rejected` events (gateway/foundation/backends/redis_refusals.py)
local function tally(refused, uid, reason)
  local field = uid .. ' ' .. reason
  redis.call('HINCRBY', refused, field, 1)
  redis.call('HSETNX', refused, field .. ' <', now)
  redis.call('HSET', refused, field .. ' >', now)
  redis.call('EXPIRE', refused, 604800)
end
-- rejected and duplicate records are logged up to `limit` per window, and while the backlog
-- has room; beyond that a refusal is only counted (`fields`: 4 the webhook; 11 'r' and 12 the
-- reason, for a refusal: a duplicate has none)
local function log_capped(rej, refused, stream, floor, window, limit, fields, backlog)
  if full_until(rej, limit, floor, window) or backlog_full(backlog) then
    if fields[11] == 'r' then tally(refused, fields[4], fields[12]) end
    return
  end
  redis.call('XADD', stream, '*', unpack(fields))
  backlog.added = backlog.added + 1
  window_push(rej, window, limit)
end
local function flush()
  for key, waiting in pairs(pushes) do
    local length
    if waiting.n == 1 then  -- the usual case: no table to build
      length = redis.call('LPUSH', key, now)
    else
      local stamps = {}
      for i = 1, waiting.n do stamps[i] = now end
      length = redis.call('LPUSH', key, unpack(stamps))
    end
    if length > 2 * waiting.limit then
      redis.call('LTRIM', key, 0, waiting.limit - 1)
    end
    redis.call('PEXPIRE', key, waiting.window)
  end
  for key, backlog in pairs(backlogs) do
    if backlog.added > 0 then redis.call('INCRBY', key, backlog.added) end
  end
end
"""


SUBMIT_SCRIPT = (
    "#!lua\n"
    """
-- SUBMIT: authenticated deliveries, one or many in one call (those that reached the gateway's
-- backend in the same event-loop turn, see submit_groups.py), each with its own outcome and
-- exactly the checks and writes it would have alone, in the order given. The failed-auth budget
-- is not consulted: a delivery that authenticates is never refused by it (AUTH_FAILED alone
-- counts and spends it).
-- KEYS, 8 per delivery: 1 version, 2 rate window, 3 reject-log window, 4 shard stream,
--       5 refusals not logged (the shard's), 6 backlog counter, 7 pending index (delivery
--       id -> stream entry id) of the webhook, 8 seen(identity);
--       or, for one large body alone, a 9th: the body, SET by the command pipelined just before
-- ARGV, 13 per delivery: 1 rate limit, 2 window ms, 3 reject-log limit, 4 de-dup ttl seconds,
--       5 webhook uid, 6 config version held, 7 backlog limit, 8 new delivery id,
--       9 '1' if body is JSON, 10 size, 11 body ('' if in KEYS[9]), 12 identity,
--       13 request headers (redacted JSON, stored with an accepted delivery)
-- (Per-webhook keys and arguments come first, per-request ones last: the client sends the
-- first part pre-encoded, see redis_backend.py.)
-- A large body stays out of the Lua VM: copying it in and out of Lua costs far more than the
-- stream append. Accepted, its key loses the orphan TTL and the stream entry names it ('k');
-- refused, the key is deleted. A missing key (the SET failed) refuses with NOBODY first.
-- With the backlog (entries waiting for the evaluator) at its limit, a new delivery is refused
-- with FULL and nothing recorded; a duplicate is still answered with its first delivery id.
-- Returns one reply per delivery, in order:
--   {'STALE'} | {'NOBODY'} | {'RATE', retry_ms} | {'BADJSON'} | {'DUP', first delivery id}
--   | {'FULL'} | {'OK', delivery id} | {'ERR', message} (a Redis error: that delivery alone)
"""
    + _HELPERS
    + """
-- a webhook's shared config version, read once a call
local versions = {}
local function stale(key, held)
  local shared = versions[key]
  if shared == nil then
    shared = tonumber(redis.call('GET', key) or '0')
    versions[key] = shared
  end
  return shared > tonumber(held)
end
-- a refused delivery's record in the reject log (capped), and its side body gone; `first`:
-- the first copy's delivery id, for a duplicate
local function reject(k, a, body_key, floor, window, backlog, label, reason, first)
  if body_key then redis.call('DEL', body_key) end
  local fields = {'d', ARGV[a + 8], 'w', ARGV[a + 5], 't', now, 'n', ARGV[a + 10], 'l', label}
  if reason then fields[11] = 'r'; fields[12] = reason end
  if first then
    fields[#fields + 1] = 'i'; fields[#fields + 1] = ARGV[a + 12]
    fields[#fields + 1] = 'f'; fields[#fields + 1] = first
  end
  log_capped(KEYS[k + 3], KEYS[k + 5], KEYS[k + 4], floor, window, tonumber(ARGV[a + 3]),
             fields, backlog)
end
-- one delivery: its keys are KEYS[k + 1 .. k + 8], its arguments ARGV[a + 1 .. a + 13], read
-- in place (copied into tables of their own, and with a closure per delivery, Lua's allocations
-- cost Redis more than most of the commands)
local function submit(k, a, body_key)
  if stale(KEYS[k + 1], ARGV[a + 6]) then
    if body_key then redis.call('DEL', body_key) end
    return {'STALE'}
  end
  if body_key and redis.call('EXISTS', body_key) == 0 then return {'NOBODY'} end
  local rate_key, id = KEYS[k + 2], ARGV[a + 8]
  local window = tonumber(ARGV[a + 2])
  local floor = now - window
  local backlog = backlog_of(KEYS[k + 6], ARGV[a + 7])
  local rate = tonumber(ARGV[a + 1])
  local free_at = full_until(rate_key, rate, floor, window)
  if free_at then
    reject(k, a, body_key, floor, window, backlog, 'Rejected (rate limited)', 'rate_limited')
    return {'RATE', free_at - now}
  end
  if ARGV[a + 9] ~= '1' then
    reject(k, a, body_key, floor, window, backlog, 'Rejected (invalid JSON)', 'invalid_json')
    window_push(rate_key, window, rate)
    return {'BADJSON'}
  end
  local first
  if backlog_full(backlog) then
    first = redis.call('GET', KEYS[k + 8])
    if not first then
      if body_key then redis.call('DEL', body_key) end
      tally(KEYS[k + 5], ARGV[a + 5], 'backlog_full')
      return {'FULL'}
    end
  else
    -- checked and set in one command; every check that could refuse the delivery is behind us
    first = redis.call('SET', KEYS[k + 8], id, 'NX', 'GET', 'EX', tonumber(ARGV[a + 4]))
  end
  if first then
    reject(k, a, body_key, floor, window, backlog, 'Duplicate', nil, first)
    window_push(rate_key, window, rate)
    return {'DUP', first}
  end
  local entry
  if body_key then
    redis.call('PERSIST', body_key)
    entry = redis.call('XADD', KEYS[k + 4], '*', 'd', id, 'w', ARGV[a + 5], 't', now,
                       'n', ARGV[a + 10], 'l', 'Accepted', 'i', ARGV[a + 12], 'k', body_key,
                       'h', ARGV[a + 13])
  else
    entry = redis.call('XADD', KEYS[k + 4], '*', 'd', id, 'w', ARGV[a + 5], 't', now,
                       'n', ARGV[a + 10], 'l', 'Accepted', 'i', ARGV[a + 12], 'p', ARGV[a + 11],
                       'h', ARGV[a + 13])
  end
  backlog.added = backlog.added + 1
  redis.call('HSET', KEYS[k + 7], id, entry)
  window_push(rate_key, window, rate)
  return {'OK', id}
end
-- one delivery's Redis error (pcall) is its own: the others of the call keep their outcomes
local function settled(ok, reply)
  if ok then return reply end
  return {'ERR', type(reply) == 'table' and reply.err or tostring(reply)}
end
local replies = {}
if #KEYS == 9 then
  replies[1] = settled(pcall(submit, 0, 0, KEYS[9]))
else
  for i = 0, #KEYS / 8 - 1 do
    replies[i + 1] = settled(pcall(submit, 8 * i, 13 * i))
  end
end
flush()
return replies
"""
)

AUTH_FAILED_SCRIPT = (
    "#!lua\n"
    """
-- AUTH_FAILED: count one failed authentication of (webhook, source) and log it.
-- KEYS: 1 version, 2 auth-failures(webhook, source), 3 reject-log window, 4 shard stream,
--       5 refusals not logged, 6 backlog counter
-- ARGV: 1 config version held, 2 auth-failure limit, 3 window ms, 4 reject-log limit,
--       5 new delivery id, 6 webhook uid, 7 size, 8 backlog limit, 9 reason code
-- Returns: {'STALE'} | {'AUTHLIMIT', retry_ms} | {'DENIED'}
"""
    + _HELPERS
    + """
local shared = redis.call('GET', KEYS[1])
if shared and tonumber(shared) > tonumber(ARGV[1]) then return {'STALE'} end
local window = tonumber(ARGV[3])
local floor = now - window
local limit = tonumber(ARGV[2])
local backlog = backlog_of(KEYS[6], ARGV[8])
local fields = {'d', ARGV[5], 'w', ARGV[6], 't', now, 'n', ARGV[7], 'l', 'Rejected (auth)',
                'r', ARGV[9]}
local free_at = full_until(KEYS[2], limit, floor, window)
if free_at then
  fields[10] = 'Rejected (rate limited)'
  fields[12] = 'auth_rate_limited'
  log_capped(KEYS[3], KEYS[5], KEYS[4], floor, window, tonumber(ARGV[4]), fields, backlog)
  flush()
  return {'AUTHLIMIT', free_at - now}
end
window_push(KEYS[2], window, limit)
log_capped(KEYS[3], KEYS[5], KEYS[4], floor, window, tonumber(ARGV[4]), fields, backlog)
flush()
return {'DENIED'}
"""
)

LOG_REJECTION_SCRIPT = (
    "#!lua\n"
    """
-- LOG_REJECTION: log a rejection decided before authentication (too large), capped.
-- KEYS: 1 reject-log window, 2 shard stream, 3 refusals not logged, 4 backlog counter
-- ARGV: 1 window ms, 2 reject-log limit, 3 new delivery id, 4 webhook uid, 5 size, 6 label,
--       7 backlog limit, 8 reason code
-- Returns: 1
"""
    + _HELPERS
    + """
local window = tonumber(ARGV[1])
local fields = {'d', ARGV[3], 'w', ARGV[4], 't', now, 'n', ARGV[5], 'l', ARGV[6], 'r', ARGV[8]}
log_capped(KEYS[1], KEYS[3], KEYS[2], now - window, window, tonumber(ARGV[2]), fields,
           backlog_of(KEYS[4], ARGV[7]))
flush()
return 1
"""
)

TAKE_REFUSALS_SCRIPT = """
-- TAKE_REFUSALS: the shard's counts of refusals not logged, taken (read and deleted at once,
-- so two evaluators never both report one).
-- KEYS: 1 the shard's refusals hash   Returns: its fields and values, flat
local taken = redis.call('HGETALL', KEYS[1])
if #taken > 0 then redis.call('DEL', KEYS[1]) end
return taken
"""

GIVE_BACK_REFUSALS_SCRIPT = """
-- GIVE_BACK_REFUSALS: counts taken but not recorded (the SQL write failed), added back.
-- KEYS: 1 the shard's refusals hash   ARGV: per count: field (`uid reason`), n, first, last
for i = 1, #ARGV, 4 do
  local field = ARGV[i]
  redis.call('HINCRBY', KEYS[1], field, ARGV[i + 1])
  local first = redis.call('HGET', KEYS[1], field .. ' <')
  if not first or tonumber(first) > tonumber(ARGV[i + 2]) then
    redis.call('HSET', KEYS[1], field .. ' <', ARGV[i + 2])
  end
  local last = redis.call('HGET', KEYS[1], field .. ' >')
  if not last or tonumber(last) < tonumber(ARGV[i + 3]) then
    redis.call('HSET', KEYS[1], field .. ' >', ARGV[i + 3])
  end
end
redis.call('EXPIRE', KEYS[1], 604800)
return 1
"""

ACK_SCRIPT = """
-- ACK: entries of one shard stream whose deliveries are committed to SQL: acknowledge and
-- delete them, lower the backlog by what was deleted (an entry acknowledged twice counts
-- once), drop their pending-index fields and their large-body keys.
-- KEYS: 1 shard stream, 2 backlog counter, 3..2+p pending indexes, then large-body keys
-- ARGV: 1 group, 2 entry count n, 3..2+n entry ids, then p, then for each pending index:
--       count m, m delivery ids
-- Returns: the number of entries deleted
local n = tonumber(ARGV[2])
redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 3, n + 2))
local gone = redis.call('XDEL', KEYS[1], unpack(ARGV, 3, n + 2))
if gone > 0 and redis.call('DECRBY', KEYS[2], gone) < 0 then redis.call('SET', KEYS[2], 0) end
local p = tonumber(ARGV[n + 3])
local at = n + 4
for k = 3, p + 2 do
  local m = tonumber(ARGV[at])
  redis.call('HDEL', KEYS[k], unpack(ARGV, at + 1, at + m))
  at = at + m + 1
end
for k = p + 3, #KEYS do redis.call('DEL', KEYS[k]) end
return gone
"""

RECOUNT_SCRIPT = """
-- RECOUNT: set the backlog counter to the entries the streams really hold (it drifts only when
-- entries are deleted behind the scripts' back, e.g. by hand).
-- KEYS: 1 backlog counter, 2.. every shard stream   Returns: the backlog
local total = 0
for k = 2, #KEYS do total = total + redis.call('XLEN', KEYS[k]) end
redis.call('SET', KEYS[1], total)
return total
"""

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
