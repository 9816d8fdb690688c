"""Example sweep modules for `python -m surge.runner.run --run=surge.runner.examples.NAME`."""
