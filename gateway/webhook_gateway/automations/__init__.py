"""Automations: a prompt plus triggers whose filters decide when a run starts; their management
API and the evaluator's compiled index of them."""
