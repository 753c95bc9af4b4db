"""Event subscriptions: a team's URLs that receive its events, signed (docs/events.md), and the
live stream of events (GET /events/stream)."""
