"""What every provider's reply client must do alike, checked against its stand-in."""

from __future__ import annotations

from collections.abc import Callable

from gateway.webhook_gateway.replies import Delivered, ReplyClient, ReplyTarget, post_or_edit


async def check_a_deleted_message_is_posted_anew(
    replies: ReplyClient, target: ReplyTarget, delete_all: Callable[[], None]
) -> None:
    """A person deleted the run's message: its edit becomes a new message, not a lost reply."""
    made = await replies.create(target, "started")
    assert isinstance(made, Delivered)
    delete_all()
    again = await post_or_edit(replies, target, "ended", made.message_id)
    assert isinstance(again, Delivered) and again.message_id != made.message_id
