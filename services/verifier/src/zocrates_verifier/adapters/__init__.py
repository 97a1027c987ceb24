"""The verifier's edges: its backends (the shipped model and local checkpoints, a remote server, OpenRouter, the heuristic) and the device probe."""
