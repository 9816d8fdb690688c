"""A 2 x 2 sweep on CartPole-v1: two learning rates x two seeds, each a short serial-mode run.

    python -m surge.runner.run --run=surge.runner.examples.cartpole_sweep --runner=processes --max_parallel=2

Folders: train_dir/cartpole_sweep/cartpole/00_cartpole_l.rat_0.001_see_1 ... 03_cartpole_l.rat_0.0003_see_2.
"""

from surge.runner import Experiment, ParamGrid, RunDescription

_params = ParamGrid([("learning_rate", [1e-3, 3e-4]), ("seed", [1, 2])])

_cmd = (
    "python -m surge.train --env=CartPole-v1 --serial_mode=True --num_workers=1 "
    "--train_for_env_steps=50000 --num_torch_threads=1"
)

RUN_DESCRIPTION = RunDescription("cartpole_sweep", experiments=[Experiment("cartpole", _cmd, _params)])
