"""Prometheus metrics (docs/operations.md, "Metrics"): counted in plain ints where they happen
(`counts`), handed to prometheus_client about once a second and at scrape time (`export`)."""
