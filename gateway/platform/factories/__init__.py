"""Factories as the platform uses them: dispatching work to the foreman, and the factory API."""
