"""Conversations: follow-ups and interrupts addressed by run or by conversation (with the debug
sessions a follow-up to a failed run asks for), and reads of what runs said."""
