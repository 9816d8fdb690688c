"""VizDoom as the `doom_` env family (see `surge.envs.doom.family`)."""
