"""The team's agents (/agent/identities) and their API keys."""
