"""Placeholder: filled in by the sorting work."""
__all__ = []
