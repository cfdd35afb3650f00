"""Placeholder: filled in by the linalg_ops work."""
__all__ = []
