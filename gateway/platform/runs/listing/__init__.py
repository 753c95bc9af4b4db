"""GET /agent/runs: its filters and keyset pages."""
