"""What the verifier decides, as plain functions and data: micro-batching of pairs, calibration of the heuristic."""
