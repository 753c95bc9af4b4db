"""The agent platform: runs, runners, tasks, factories, factory files, scoring, benchmark
suites, schedules, the inbox and analytics. Each sub-package holds its rules and its /api/v1
handlers (`routes`) side by side. The webhook gateway imports nothing of it: the
evaluator writes runs through a port that `gateway.composition.wiring` fills with `run_start`."""
