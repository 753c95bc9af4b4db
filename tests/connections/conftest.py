"""The real payloads of tests/providers (GitHub's @octokit/webhooks-examples) serve here too."""

from tests.providers.conftest import github_examples

__all__ = ["github_examples"]
