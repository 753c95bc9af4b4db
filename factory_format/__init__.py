"""Factory definition trees in the v1alpha1 file format: read, check and model them.

Standalone (no import of ``gateway``): a tree in ({relative path: text}, or a directory),
diagnostics and a typed, comparable model out. Apply and plan, which need the server's state,
call this. See docs/factory-files.md.

```python
result = parse_tree({"factory.yaml": "...", "agents/foreman/agent.md": "..."})
if result.ok:
    result.tree.resources()  # {("agent", "foreman"): Agent(...), ...}
    result.tree.deferred_references  # what only the server can check
else:
    result.diagnostics  # every problem: path, line, column, FF_* code, message
```
"""

from __future__ import annotations

from .codes import CODE_SUMMARIES, Code
from .compare import changed_fields, comparable
from .diagnostics import Diagnostic
from .directory import (
    DefinitionRootError,
    DirectoryTree,
    definition_roots_below,
    find_definition_root,
    parse_directory,
    read_directory,
)
from .inheritance import InheritanceError, resolve_effective
from .layout import FileKind
from .model import (
    Agent,
    Automation,
    BenchmarkSuite,
    BenchmarkTask,
    DeferredReference,
    EffectiveConfig,
    EffectiveHarness,
    Factory,
    FactoryTree,
    Resource,
    ResourceKey,
    RunConfig,
    Runner,
    Scorer,
    Skill,
    Webhook,
)
from .parse import ParseResult, parse_tree
from .schemas import (
    CURRENT_VERSION,
    VERSIONS,
    schema_bundle,
    schema_document,
    schema_versions,
)
from .sources import MAX_FILE_BYTES, MAX_FILES, MAX_TREE_BYTES
from .triggers.matchers import Matcher
from .triggers.model import Schedule, Trigger
from .triggers.plain import PlainProblem, PlainReference, PlainTriggers, check_plain_triggers
from .warnings import never_firing

__all__ = [
    "CODE_SUMMARIES",
    "CURRENT_VERSION",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MAX_TREE_BYTES",
    "VERSIONS",
    "Agent",
    "Automation",
    "BenchmarkSuite",
    "BenchmarkTask",
    "Code",
    "DeferredReference",
    "DefinitionRootError",
    "Diagnostic",
    "DirectoryTree",
    "EffectiveConfig",
    "EffectiveHarness",
    "Factory",
    "FactoryTree",
    "FileKind",
    "InheritanceError",
    "Matcher",
    "ParseResult",
    "PlainProblem",
    "PlainReference",
    "PlainTriggers",
    "Resource",
    "ResourceKey",
    "RunConfig",
    "Runner",
    "Schedule",
    "Scorer",
    "Skill",
    "Trigger",
    "Webhook",
    "changed_fields",
    "check_plain_triggers",
    "comparable",
    "definition_roots_below",
    "find_definition_root",
    "never_firing",
    "parse_directory",
    "parse_tree",
    "read_directory",
    "resolve_effective",
    "schema_bundle",
    "schema_document",
    "schema_versions",
]
