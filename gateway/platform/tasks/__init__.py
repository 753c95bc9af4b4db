"""Factory tasks: one live task per conversation, moving through stages."""
