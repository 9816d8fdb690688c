"""Sweeps of experiments on local processes or Slurm, Sample Factory's launcher API (docs/runner.md).

    from surge.runner import Experiment, ParamGrid, RunDescription

    RUN_DESCRIPTION = RunDescription(
        "cartpole_sweep",
        experiments=[Experiment("cartpole", "python -m surge.train --env=CartPole-v1",
                                ParamGrid([("learning_rate", [1e-3, 3e-4]), ("seed", [1, 2])]))],
    )

then `python -m surge.runner.run --run=my_module --runner=processes --max_parallel=2`.
"""

from surge.runner.run_description import Experiment, ParamGenerator, ParamGrid, ParamList, RunDescription

__all__ = ["Experiment", "ParamGenerator", "ParamGrid", "ParamList", "RunDescription"]
