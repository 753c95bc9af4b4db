"""A run as the store holds it: its shapes, its states and the one table of the changes between
them (`states`), reading it, its timeline, what clients see of it, and cancelling it."""
