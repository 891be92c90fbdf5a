"""Models, one file per family, in the order of the book (configs live beside their models)."""
