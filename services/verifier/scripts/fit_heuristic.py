"""Refit the heuristic verifier's logistic calibration on SciFact and print held-out metrics.

    .venv/bin/python services/verifier/scripts/fit_heuristic.py [--data DIR] [--l2 1.0]

Paste the printed `COEFFICIENTS = (...)` line into
`zocrates_verifier/backends/heuristic.py`; see `zocrates_verifier.domain.calibration` for the data,
the split and the augmentation.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from zocrates_verifier.adapters.backends import heuristic
from zocrates_verifier.domain import calibration


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="SciFact fixture directory")
    parser.add_argument("--l2", type=float, default=1.0, help="L2 penalty on the weights")
    args = parser.parse_args()
    coefficients = calibration.refit(args.data, l2=args.l2)
    print("features:", ", ".join(("intercept",) + heuristic.FEATURES))
    print(calibration.format_coefficients(coefficients))
    for name, result in calibration.evaluate(coefficients, data_dir=args.data).items():
        print(
            f"{name}: " + ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items())
        )


if __name__ == "__main__":
    main()
