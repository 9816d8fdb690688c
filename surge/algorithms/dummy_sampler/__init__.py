"""The dummy_sampler algorithm: its declaration, config section, losses, networks and learner."""
