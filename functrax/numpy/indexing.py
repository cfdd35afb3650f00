"""Placeholder: filled in by the indexing work."""
__all__ = []
