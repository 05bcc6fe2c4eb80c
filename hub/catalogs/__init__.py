"""Catalogs: immutable, versioned snapshots of a server's tools, and their drift diffs."""
