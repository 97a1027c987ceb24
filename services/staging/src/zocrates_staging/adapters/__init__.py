"""Staging's edges: the SSRF-guarded HTTP download and the isolated PDF check."""
