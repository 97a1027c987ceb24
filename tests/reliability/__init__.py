"""The failure and attack suite of shared/RELIABILITY.md; each test reports its figures."""
