"""Training and evaluation data for the answer writer's question-sentence relevance model.

`sources` reads each public set from `bench/data/relevance/raw/` into one row format;
`build` turns those rows into seeded train, calibration and evaluation splits and writes
`bench/data/relevance/MANIFEST.md`. Run `python -m tools.relevance_data.build`.
"""
