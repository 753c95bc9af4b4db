"""Scheduled agents: cron schedules that start an agent run at each slot, exactly once."""
