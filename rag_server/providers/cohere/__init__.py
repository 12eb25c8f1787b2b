"""Cohere providers (cohere SDK, ClientV2)."""
