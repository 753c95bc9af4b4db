"""Factory analytics: metrics, costs, pull requests and run counts, aggregated in SQL."""
