"""Scorers of a factory's runs, their dispatch and what scoring jobs found."""
