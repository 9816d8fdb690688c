"""The composition root: the one layer above every subsystem (issue 56, item 2).

It resolves the configuration (command line, our YAML, rl_games' YAML, a resumed run's saved
config) and runs the preflight, each subsystem's own checks in turn, before a run is built:

- `resolve`: `parse_cfg`, the sources of a config and their precedence;
- `preflight`: `validate_cfg`, every subsystem's checks in one fixed order;
- `notes`: the run log's notes on flags without effect;
- `space_defaults`: the defaults an env's spaces choose (the env made once);
- `check_env`: `surge check-env`, what keeps a user's env from running (with the run's flags);
- `reference`: docs/configuration.md, every flag of every family and algorithm.

Nothing below `surge.app` should import it (the import contract in pyproject.toml,
`tests/unit/test_import_layers.py`, lists the imports that still do, with their owners).
"""
