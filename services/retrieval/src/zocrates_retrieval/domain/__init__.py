"""What retrieval decides, as plain functions and data: the document model, its structure (section roles, answer units), tables, markup and chunks."""
