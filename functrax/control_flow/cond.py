"""Placeholder: filled in by the control-flow work (cond)."""
__all__ = []
