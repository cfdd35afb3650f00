"""Placeholder: filled in by the control-flow work (loops)."""
__all__ = []
