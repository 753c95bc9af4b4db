"""Every diagnostic code, in one place. A code never changes meaning once published: clients
match on it. docs/factory-files.md shows an example of each (a test keeps the two in step)."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["CODE_SUMMARIES", "Code"]


class Code(StrEnum):
    INVALID_PATH = "FF_INVALID_PATH"
    UNSUPPORTED_PATH = "FF_UNSUPPORTED_PATH"
    DUPLICATE_PATH = "FF_DUPLICATE_PATH"
    SYMLINK = "FF_SYMLINK"
    INVALID_NAME = "FF_INVALID_NAME"
    TOO_MANY_FILES = "FF_TOO_MANY_FILES"
    FILE_TOO_LARGE = "FF_FILE_TOO_LARGE"
    TREE_TOO_LARGE = "FF_TREE_TOO_LARGE"
    INVALID_ENCODING = "FF_INVALID_ENCODING"
    MISSING_FACTORY = "FF_MISSING_FACTORY"
    YAML_SYNTAX = "FF_YAML_SYNTAX"
    MULTIPLE_DOCUMENTS = "FF_MULTIPLE_DOCUMENTS"
    ANCHOR = "FF_ANCHOR"
    ALIAS = "FF_ALIAS"
    TAG = "FF_TAG"
    MERGE_KEY = "FF_MERGE_KEY"
    DUPLICATE_KEY = "FF_DUPLICATE_KEY"
    NON_SCALAR_KEY = "FF_NON_SCALAR_KEY"
    MALFORMED_FRONTMATTER = "FF_MALFORMED_FRONTMATTER"
    INVALID_DOCUMENT = "FF_INVALID_DOCUMENT"
    UNSUPPORTED_VERSION = "FF_UNSUPPORTED_VERSION"
    UNKNOWN_FIELD = "FF_UNKNOWN_FIELD"
    MISSING_FIELD = "FF_MISSING_FIELD"
    INVALID_TYPE = "FF_INVALID_TYPE"
    INVALID_VALUE = "FF_INVALID_VALUE"
    DUPLICATE_VALUE = "FF_DUPLICATE_VALUE"
    CONFLICTING_FIELDS = "FF_CONFLICTING_FIELDS"
    EMPTY_BODY = "FF_EMPTY_BODY"
    INVALID_MCP = "FF_INVALID_MCP"
    INVALID_HARNESS = "FF_INVALID_HARNESS"
    FOREMAN = "FF_FOREMAN"
    INVALID_REFERENCE = "FF_INVALID_REFERENCE"
    INVALID_TRIGGER = "FF_INVALID_TRIGGER"
    INVALID_FILTER = "FF_INVALID_FILTER"
    INVALID_SCHEDULE = "FF_INVALID_SCHEDULE"
    LIMIT_EXCEEDED = "FF_LIMIT_EXCEEDED"
    NEVER_FIRES = "FF_NEVER_FIRES"
    UNLISTED_MODEL = "FF_UNLISTED_MODEL"


CODE_SUMMARIES: dict[Code, str] = {
    Code.INVALID_PATH: "a posted path is absolute, has `..`, `\\` or empty segments",
    Code.UNSUPPORTED_PATH: "a resource file sits at a path the format does not define",
    Code.DUPLICATE_PATH: "one resource is declared by two files",
    Code.SYMLINK: "a resource path is a symbolic link; links are never followed",
    Code.INVALID_NAME: "a name taken from a path has characters names may not have",
    Code.TOO_MANY_FILES: "the tree has more than 256 definition files",
    Code.FILE_TOO_LARGE: "a definition file is larger than 256 KiB, or holds more than 10,000 "
    "YAML values",
    Code.TREE_TOO_LARGE: "the definition files add up to more than 2 MiB, or hold more than "
    "25,000 YAML values",
    Code.INVALID_ENCODING: "a file is not UTF-8 text",
    Code.MISSING_FACTORY: "no factory.yaml at the root of the tree",
    Code.YAML_SYNTAX: "the YAML does not parse",
    Code.MULTIPLE_DOCUMENTS: "a file holds more than one YAML document",
    Code.ANCHOR: "a YAML anchor (`&name`)",
    Code.ALIAS: "a YAML alias (`*name`)",
    Code.TAG: "an explicit YAML tag (`!!str`, `!custom`)",
    Code.MERGE_KEY: "a YAML merge key (`<<`)",
    Code.DUPLICATE_KEY: "a key appears twice in one mapping",
    Code.NON_SCALAR_KEY: "a mapping key is itself a list or a mapping",
    Code.MALFORMED_FRONTMATTER: "a Markdown resource does not open and close its `---` fences",
    Code.INVALID_DOCUMENT: "a document is empty or its root is not a mapping",
    Code.UNSUPPORTED_VERSION: "`schemaVersion` names a version this server does not know",
    Code.UNKNOWN_FIELD: "a key the format does not define at that place",
    Code.MISSING_FIELD: "a required key is absent",
    Code.INVALID_TYPE: "a value has the wrong type (a string where a list is expected, ...)",
    Code.INVALID_VALUE: "a value is out of its range, set or pattern",
    Code.DUPLICATE_VALUE: "a list or a set of resources holds the same value twice",
    Code.CONFLICTING_FIELDS: "keys that exclude each other are declared together",
    Code.EMPTY_BODY: "a Markdown body that must hold text (prompt, rubric) is empty",
    Code.INVALID_MCP: "an MCP server entry is not `{warpId: ...}`",
    Code.INVALID_HARNESS: "a harness block, or the harness it inherits, does not hold together",
    Code.FOREMAN: "the tree has no FOREMAN (alias MAIN) agent, or more than one",
    Code.INVALID_REFERENCE: "a name refers to a resource that is not declared",
    Code.INVALID_TRIGGER: "a trigger's provider, event or schedule is not valid",
    Code.INVALID_FILTER: "a trigger filter key or value is not valid for its (provider, event)",
    Code.INVALID_SCHEDULE: "a cron expression is not valid",
    Code.LIMIT_EXCEEDED: "more resources of a kind than a factory may have",
    Code.NEVER_FIRES: "a warning, the tree applies: a trigger the server can never fire",
    Code.UNLISTED_MODEL: "a warning, not an error: a model id outside the server's catalogue "
    "(the server checks it; an error with GATEWAY_STRICT_MODEL_CATALOGUE=1)",
}
