"""Fakes at the edge of the world: local HTTP servers that speak a provider's real wire format."""
