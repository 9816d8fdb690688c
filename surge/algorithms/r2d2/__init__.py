"""The r2d2 algorithm: its declaration, config section, losses, networks and learner."""
