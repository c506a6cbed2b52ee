"""Interop tests (see docs/conformance.md for how to run them)."""
