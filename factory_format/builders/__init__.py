"""Checked documents -> the typed model: the rules a JSON Schema cannot say, per file kind
and across files, and the references only the server can check."""
