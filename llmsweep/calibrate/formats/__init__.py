"""Benchmark files as the tools write them, one small module per format (see readers.read_file)."""
