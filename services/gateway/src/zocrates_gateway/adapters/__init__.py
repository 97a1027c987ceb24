"""The gateway's edges: the token and session stores (JetStream KV) and the LLM endpoint."""
