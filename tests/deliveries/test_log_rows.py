"""The evaluator's log rows (deliveries.log.prepare_log), built as the driver takes them, are
the rows the generic path makes of the same records (`logged_row` through LOGGED's encoders),
on both drivers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect

from gateway.foundation.backends.contract import DeliveryRecord, Label
from gateway.kernel.rejections import Reason
from gateway.webhook_gateway.deliveries import log as delivery_log
from gateway.webhook_gateway.deliveries.trace import TraceWrites, _trace

DIALECTS = [sqlite.dialect(), postgresql.asyncpg.dialect()]  # type: ignore[attr-defined]
AT = datetime(2026, 12, 2, 10, 0, 0, 123456, tzinfo=UTC)


def _records() -> list[DeliveryRecord]:
    return [
        DeliveryRecord(
            "dlv_1", "whk_1", AT, 12, Label.ACCEPTED, "id-1", None, b"{}", None, b"A: b"
        ),
        DeliveryRecord("dlv_2", "whk_1", AT, 3, Label.ACCEPTED, None, None, b"[1]"),
        DeliveryRecord("dlv_3", "whk_2", AT, 0, Label.DUPLICATE, "id-1", "dlv_1"),
        DeliveryRecord("dlv_4", "pcn_1", AT, 9, Label.AUTH, reason=Reason.SIGNATURE_MISMATCH),
    ]


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_prepared_log_rows_are_the_generic_rows(dialect: Dialect) -> None:
    records = _records()
    trace = _trace("matched")
    traces = TraceWrites({"dlv_1": trace})
    prepared = delivery_log.prepare_log(dialect, records, traces)
    assert prepared.groups == [r.delivery_id for r in records]
    columns = delivery_log.LOGGED.columns
    at = columns.index("evaluated_at")
    for record, values in zip(records, prepared.values, strict=True):
        taken = (trace.encoded, trace.evaluation) if record.delivery_id == "dlv_1" else None
        now = values[at]  # the batch's evaluation time, as the driver takes it
        expected_row = delivery_log.logged_row(record, AT, taken)
        expected = delivery_log.LOGGED.encode(dialect, [expected_row])[0]
        accepted = record.label is Label.ACCEPTED
        assert (now is not None) is accepted
        assert values[:at] + values[at + 1 :] == expected[:at] + expected[at + 1 :]
    assert len(traces) == 0  # dlv_1's trace went into its row
