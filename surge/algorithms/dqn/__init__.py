"""The dqn algorithm: its declaration, config section, losses, networks and learner."""
