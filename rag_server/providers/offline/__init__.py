"""Offline providers (the defaults): nothing leaves the process."""
