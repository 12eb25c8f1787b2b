"""Flow A (offline): PDF -> parse -> segment -> page map -> chunk -> gates -> embed (cache) -> load."""
