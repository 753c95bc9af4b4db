"""The factory inbox: notifications produced by the events they report, and their read state."""
