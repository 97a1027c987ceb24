"""What discovery decides, as plain functions and data: works, novelty against the library, whose contact the providers get."""
