"""Factory repositories: the definition files a team keeps as code, planned and applied."""
