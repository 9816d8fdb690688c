"""The ddpg_td3 algorithm: its declaration, config section, losses, networks and learner."""
