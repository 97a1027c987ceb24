"""Training and evaluation data for the verifier's claim-passage support model.

`sources` reads each public set from `bench/data/verifier/raw/` into one row format;
`build` turns those rows into seeded train, calibration and evaluation splits and writes
`bench/data/verifier/MANIFEST.md`. Run `python -m tools.verifier_data.build`.
"""
