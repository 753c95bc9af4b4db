"""How accepted deliveries travel from ingress to the evaluator: one package per transport,
holding what ingress appends and what the evaluator reads (docs/architecture.md#transports).

- `redis_stream/`: Redis (single or Cluster), any store. Ingress appends with one EVALSHA per
  event-loop turn (`ingress`, `submit_groups`); the evaluator reads the shard streams
  (`source`); the delivery log API sees what waits there (`pending`).
- `outbox/`: no Redis, a SQLite file store. Ingress appends to a SQLite file of its own beside
  the store (`file`); the evaluator moves its rows into the delivery log (`source`).
- `pending_log/`: no Redis, PostgreSQL (or an in-memory SQLite). Ingress inserts the delivery
  log rows as pending; the evaluator claims them there (`source`).

`embedded/` is the ingress end the two transports without Redis share: limits and
de-duplication in memory (`backend`) and the group-commit writer (`writer`), which appends to
the outbox beside a SQLite file and to the delivery log elsewhere. `contract` is what the
evaluator reads from each; `polled` what the two SQL-polling sources share; `readiness` the
probes and gauges of each transport's backlog.
"""
