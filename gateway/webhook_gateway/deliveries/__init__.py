"""The delivery log of custom webhooks: reads, outcome traces, replays and filter backtests."""
