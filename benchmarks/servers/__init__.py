"""Baseline servers the gateway is measured against."""
