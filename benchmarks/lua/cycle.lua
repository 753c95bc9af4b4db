-- Cycles through a pre-generated request file (see benchmarks/requests_file.py).
-- Usage: wrk ... -s cycle.lua URL -- <request file>
-- Counts statuses per thread in response(); done() prints one JSON line prefixed "BENCH_JSON ".

local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

function init(args)
   local f = assert(io.open(args[1], "rb"))
   local n_bodies, n_requests = f:read("*n", "*n")
   f:read(1)
   bodies = {}
   for i = 1, n_bodies do
      local size = f:read("*n")
      f:read(1)
      bodies[i] = f:read(size)
   end
   heads = {}
   refs = {}
   for i = 1, n_requests do
      local ref, size = f:read("*n", "*n")
      f:read(1)
      refs[i] = ref
      heads[i] = f:read(size)
   end
   f:close()
   total = n_requests
   index = 0
   wraps = 0
   statuses = {}
end

function request()
   index = index + 1
   if index > total then
      index = 1
      wraps = wraps + 1
   end
   return heads[index] .. bodies[refs[index]]
end

function response(status, headers, body)
   local key = tostring(status)
   statuses[key] = (statuses[key] or 0) + 1
end

function done(summary, latency, requests)
   local merged = {}
   local wrapped = 0
   local sent = 0
   for _, thread in ipairs(threads) do
      local counts = thread:get("statuses")
      for status, n in pairs(counts) do
         merged[status] = (merged[status] or 0) + n
      end
      wrapped = wrapped + thread:get("wraps")
      sent = sent + thread:get("index") + thread:get("wraps") * thread:get("total")
   end
   local parts = {}
   for status, n in pairs(merged) do
      table.insert(parts, string.format('"%s":%d', status, n))
   end
   local e = summary.errors
   io.write(string.format(
      'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"sent":%d,"wraps":%d,' ..
      '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
      '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"p999":%d,"max":%d,"mean":%.1f},' ..
      '"statuses":{%s}}\n',
      summary.requests, summary.duration, summary.bytes, sent, wrapped,
      e.connect, e.read, e.write, e.status, e.timeout,
      latency:percentile(50), latency:percentile(90), latency:percentile(99),
      latency:percentile(99.9), latency.max, latency.mean,
      table.concat(parts, ",")))
end
