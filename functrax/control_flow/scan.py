"""Placeholder: filled in by the control-flow work (scan)."""
__all__ = []
