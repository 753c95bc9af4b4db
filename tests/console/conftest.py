"""Fixtures the console's tests share with the provider and reply tests."""

from tests.connections.test_run_replies import gateway_of, github
from tests.providers.conftest import github_examples

__all__ = ["gateway_of", "github", "github_examples"]
