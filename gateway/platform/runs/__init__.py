"""Agent runs: creation, listing, follow-ups, conversations, timelines and what runs leave
behind."""
