"""The a2c algorithm: its declaration, config section, losses, networks and learner."""
