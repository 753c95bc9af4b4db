"""The runner protocol: runners claim runs with a lease, report progress and finish them."""
