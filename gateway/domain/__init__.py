"""Domain rules; no HTTP here. Functions take a connection and plain values."""
