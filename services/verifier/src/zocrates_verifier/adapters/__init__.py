"""The verifier's edges: its backends (the shipped model and local checkpoints, a remote server, OpenRouter, the heuristic); the device probe is the runtime's (zocrates_runtime.device)."""
