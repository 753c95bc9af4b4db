"""Who is who: teams, users, agents' API keys, team secrets, and factories with their access
rules. Both products stand on it."""
