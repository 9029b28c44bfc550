"""One module per backend; each lowers a ``Program`` by its own table keyed by op name."""
