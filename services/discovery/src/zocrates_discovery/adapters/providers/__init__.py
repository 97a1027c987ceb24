"""Adapters to the scholarly APIs: each turns HTTP answers into `Work` records and nothing more."""
