"""Attachments with content: prepared for a run with signed upload URLs, uploaded once, kept in
the attachment store, handed to runners as signed download URLs."""
