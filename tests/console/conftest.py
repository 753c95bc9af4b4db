from tests.providers.conftest import github_examples

__all__ = ["github_examples"]
