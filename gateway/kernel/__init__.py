"""The shared kernel: identifiers, errors and problem documents, settings, logging, secrets and
the small types every other part of the gateway uses. It imports nothing else of the gateway."""
