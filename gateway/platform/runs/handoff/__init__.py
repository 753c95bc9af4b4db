"""What a run hands over between executions (its files as of the latest ended one), and the
public shared-session lookups."""
