"""The Redis stream transport: accepted deliveries wait in one stream per shard until the
evaluator has logged them (docs/ingress.md, docs/evaluator.md)."""
