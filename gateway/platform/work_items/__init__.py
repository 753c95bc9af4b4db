"""Work items: what the runs of provider events are about (docs/providers.md#work-items).

- `store`: the evaluator's side (through `run_start`): find a batch's work items, insert the
  new ones, send the follow-ups of deliveries that continue them;
- `stages`: a work item's stage follows its runs' states (the run timeline's hook) and a change
  fires the factory's `work_item_stage_changed` triggers;
- `listing` and `routes`: GET /factory/{uid}/work-items and one work item.

Importing the package registers `stages` with the run timeline (`on_state_changes`).
"""

from gateway.platform.work_items import stages

__all__ = ["stages"]
