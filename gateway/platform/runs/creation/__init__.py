"""Starting runs: the only writer of new run rows (`new_runs`), the agent config every new run
is checked against, where it may execute (`worker_pinning`), POST /agent/runs, and the runs
automations start inside the platform."""
