"""Test-session defaults shared by the unit tests and nbval (the notebook kernels inherit this environment)."""
import os

# The test suite runs the book at `smoke` scale unless told otherwise (CI sets it explicitly too).
os.environ.setdefault("SHOULDERS_SCALE", "smoke")
# Headless plotting in the unit tests; notebook kernels choose their own inline backend.
os.environ.setdefault("MPLBACKEND", "Agg")
