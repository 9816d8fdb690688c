"""The composition root: the one layer above every subsystem (issue 56, item 2).

It resolves the configuration (command line, our YAML, rl_games' YAML, a resumed run's saved
config) and runs the preflight, each subsystem's own checks in turn, before a run is built. Nothing
below `surge.app` imports it (the import contract in pyproject.toml, `tests/unit/test_import_layers.py`).
"""
