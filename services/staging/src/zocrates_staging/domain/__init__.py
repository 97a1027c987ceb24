"""What staging decides, as plain functions: names of staged files and the record of each candidate."""
