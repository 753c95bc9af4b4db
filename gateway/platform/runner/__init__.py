"""The reference runner: `gateway runner --command CMD` executes claimed runs as shell commands
through the runner protocol (docs/runs-and-tasks.md, "Runners"). It talks to the API over HTTP
only and imports nothing of the server."""
