"""The appo algorithm: its declaration, config section, losses, networks and learner."""
