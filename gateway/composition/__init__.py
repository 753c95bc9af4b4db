"""Composition: the app, the wiring that builds a process's parts, the worker process, preflight
checks and the command line. Nothing else imports it."""
