"""Agent runs, one concept per subpackage, each above the ones it uses (the import contracts of
pyproject.toml, docs/architecture.md "The platform's layers"):

- `routes`: /agent/runs (create, list, get, follow up, cancel, interrupt);
- `creation`: the one writer of new runs, the checks every new run passes, POST /agent/runs;
  `listing`: GET /agent/runs;
- `conversations`: follow-ups, interrupts, debug session requests, what runs said; `handoff`;
- `outputs`: artifacts and the timeline, for their readers;
- `attachments`: files for runs, uploaded and downloaded through signed URLs;
- `record`: the run as stored, its states and their one transition table, its timeline;
  `skills`: skill specs and the skills runs start from.
"""
