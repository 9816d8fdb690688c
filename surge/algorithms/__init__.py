"""One package per algorithm (`appo/`, `a2c/`, `dqn/`, `r2d2/`, `ddpg_td3/`, `sac/`,
`dummy_sampler/`), each holding its declaration (the `register_algorithm` call), its config section,
its losses, its networks and its learner. What several algorithms share lives in `surge.learning`."""
