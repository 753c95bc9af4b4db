"""Custom webhooks: their management (create, change, rotate, delete) and its API."""
