"""Who may call, how often, and over what: API keys with scopes (keys.py, auth.py), per-key rate limits and
the cap on concurrent Ask streams (limits.py), TLS and mutual TLS (tls.py), `rag-server keys` (keys_cli.py).

Everything here joins the call plumbing as Gates (`rag_server.call_context.Gate`), built by
`setup.gates_for`. Health and reflection never pass through a gate (`OPEN_PREFIXES`).
"""
