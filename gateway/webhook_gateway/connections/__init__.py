"""Provider connections: a team's GitHub, GitLab, Slack, Linear or Jira, whose native webhooks
start the provider triggers of the team's factories (docs/providers.md)."""
