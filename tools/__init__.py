"""Maintenance tools for the repository itself (documentation), not part of the toolkit."""
