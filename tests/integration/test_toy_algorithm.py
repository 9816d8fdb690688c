"""An algorithm is one folder (issue 56, item 3): the test writes a toy policy-gradient algorithm,
TOY_PG, as a package of its own in tmp_path (its declaration, its config section with one flag, its
loss, its model and its learner, each a module), puts the folder on `PYTHONPATH`, names it with
`--algo=toy_pg:TOY_PG` (the way any plug-in loads) and trains it a few thousand frames in the
serial and in the async placement, one `python -m surge.train` subprocess each. No file of `surge/`
is written or patched: the flag reaching the loss shows in the run's summaries, where the loss
logs `toy_scaled_reward` = mean(reward x --toy_reward_scale) (CartPole pays 1 per step, so the
statistic is the flag's value)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from surge.experiment.events import read_scalars

ROOT = Path(__file__).resolve().parents[2]
SCALE = 0.375  # --toy_reward_scale: exact in float32, far from the default 1

FILES = {
    "__init__.py": '''"""TOY_PG: REINFORCE with a flag of its own; importing the package registers it."""

from toy_pg import declaration  # noqa: F401
''',
    "params.py": '''"""TOY_PG's config section."""

from dataclasses import dataclass

from surge.cfg.config import param
from surge.errors import ConfigError


@dataclass
class ToyPGParams:
    """TOY_PG's own flags (`--help` section "algorithm toy_pg:TOY_PG")."""

    toy_reward_scale: float = param(1.0, "Factor on the rewards the policy gradient weighs.")
    # a declared range: the preflight checks it from this definition (a count: an integer >= 1)
    toy_hidden: int = param(16, "Hidden units of the policy.", low=1)

    def validate(self) -> None:
        if not self.toy_reward_scale > 0:
            raise ConfigError("toy_reward_scale", f"must be > 0, got {self.toy_reward_scale}.", "")
''',
    "loss.py": '''"""TOY_PG's loss, a pure function."""

import torch
from torch import Tensor


def toy_pg_loss(logits: Tensor, actions: Tensor, rewards: Tensor, valids: Tensor, scale: float):
    """REINFORCE on one-step returns: logits `[T, N, A]`, actions / rewards / valids `[T, N]`;
    returns the loss and `toy_scaled_reward`, the mean scaled reward over valid steps."""
    count = valids.sum().clamp(min=1.0)
    scaled = rewards * scale
    log_probs = torch.distributions.Categorical(logits=logits).log_prob(actions)
    baseline = (scaled * valids).sum() / count
    loss = -(log_probs * (scaled - baseline) * valids).sum() / count
    return loss, float(baseline)
''',
    "model.py": '''"""TOY_PG's network: an MLP policy."""

import gymnasium as gym
import torch
from torch import Tensor, nn

from surge.cfg.config import algo_params
from surge.learning.algorithm import ModelParts
from toy_pg.params import ToyPGParams


class ToyPolicy(nn.Module):
    """obs `[B, obs_dim]` -> action logits `[B, num_actions]`."""

    rnn_state_size = 0

    def __init__(self, obs_dim: int, num_actions: int, hidden: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, num_actions))

    def forward(self, obs: Tensor) -> Tensor:
        return self.net(obs.float())


def make_parts(cfg, obs_space: gym.Space, action_space: gym.Space) -> ModelParts:
    p = algo_params(cfg, ToyPGParams)
    obs_dim = int(torch.tensor(obs_space.shape).prod())
    return ModelParts(ToyPolicy(obs_dim, int(action_space.n), p.toy_hidden))
''',
    "learner.py": '''"""TOY_PG's learner: one step per batch."""

from typing import Any

from surge.cfg.config import algo_params
from surge.learning.base import LearnerBase
from toy_pg.loss import toy_pg_loss
from toy_pg.params import ToyPGParams


class ToyPGLearner(LearnerBase):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.params = algo_params(self.cfg, ToyPGParams)

    def train_batch(self, b: dict[str, Any], env_frames: int = 0) -> dict[str, float]:
        self._mask_stale(b)
        T = b["rewards"].shape[0]
        logits = self.model(b["obs"][:T])
        loss, scaled = toy_pg_loss(logits, b["actions"], b["rewards"], b["valids"], self.params.toy_reward_scale)
        for opt in self.optimizers.values():
            opt.zero_grad(set_to_none=True)
        loss.backward()
        for opt in self.optimizers.values():
            opt.step()
        self.policy_version += 1
        return {"loss": float(loss.detach()), "toy_scaled_reward": scaled, "policy_version": float(self.policy_version)}
''',
    "declaration.py": '''"""TOY_PG's declaration."""

import torch

from surge.learning.algorithm import ActContext, Algorithm, register_algorithm
from surge.learning.pg_checks import POLICY_GRADIENT_PARAMS
from toy_pg.learner import ToyPGLearner
from toy_pg.model import make_parts
from toy_pg.params import ToyPGParams


def act(model, obs, rnn_states, ctx: ActContext):
    logits = model(obs)
    dist = torch.distributions.Categorical(logits=logits)
    actions = logits.argmax(-1) if ctx.deterministic else dist.sample()
    return {"actions": actions, "rnn_states": rnn_states}


TOY_PG = register_algorithm(
    Algorithm(
        name="TOY_PG",
        description="REINFORCE with a reward scale of its own (tests/integration/test_toy_algorithm.py)",
        step_fields=lambda action_space: [],
        act=act,
        make_learner=ToyPGLearner,
        make_model=make_parts,
        params=ToyPGParams,
        default_overrides={"num_minibatches_to_accumulate": 0, "learning_rate": 1e-3},
        unused_params=POLICY_GRADIENT_PARAMS,
        metric_tags={"toy_scaled_reward": "losses/toy_scaled_reward"},
    )
)
''',
}


def _write_package(folder: Path) -> None:
    pkg = folder / "toy_pg"
    pkg.mkdir(parents=True)
    for name, text in FILES.items():
        (pkg / name).write_text(text)


@pytest.mark.slow
@pytest.mark.parametrize("serial", [True, False], ids=["serial", "async"])
def test_a_toy_algorithm_in_one_folder_trains_and_its_flag_reaches_its_loss(tmp_path, serial):
    code = tmp_path / "code"
    _write_package(code)
    before = {p: p.stat().st_mtime_ns for p in (ROOT / "surge").rglob("*.py")}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), str(ROOT)])}
    env.update(SDL_VIDEODRIVER="dummy", SDL_AUDIODRIVER="dummy")
    experiment = "toy_serial" if serial else "toy_async"
    cmd = [
        sys.executable,
        "-m",
        "surge.train",
        "--env=CartPole-v1",
        "--algo=toy_pg:TOY_PG",
        f"--toy_reward_scale={SCALE}",
        f"--serial_mode={serial}",
        f"--train_dir={tmp_path / 'train'}",
        f"--experiment={experiment}",
        "--train_for_env_steps=4000",
        "--num_workers=2",
        "--num_envs_per_worker=4",
        "--rollout=16",
        "--recurrence=16",
        "--batch_size=128",
        "--use_rnn=False",
        "--decorrelate_experience_max_seconds=0",
        "--set_workers_cpu_affinity=False",
        "--num_torch_threads=1",
        "--experiment_summaries_interval=1",
        "--seed=1",
    ]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    folder = tmp_path / "train" / experiment
    assert (folder / "done").is_file()
    scalars = read_scalars(folder)[0]
    series = scalars["losses/toy_scaled_reward"]
    assert len(series.values) >= 1 and series.env_frames[-1] > 0
    assert all(abs(v - SCALE) < 1e-6 for v in series.values), series.values  # the flag's value
    assert {p: p.stat().st_mtime_ns for p in (ROOT / "surge").rglob("*.py")} == before


#: run in a fresh interpreter with the toy package on the path: what the folder's section gives the
#: command line (its flags, `--help` group, generated range check, refusals, flat cfg.json)
SECTION_PROBE = r"""
import json, sys
from pathlib import Path
from surge.app.resolve import parse_cfg
from surge.cfg.cli import save_cfg
from surge.errors import ConfigError
from surge.learning.run_flags import rebuild_cfg

train_dir = sys.argv[1]
base = ["--env=CartPole-v1", f"--train_dir={train_dir}", "--algo=toy_pg:TOY_PG"]
out = {}
cfg = parse_cfg([*base, "--toy_reward_scale=0.5"])
out["section"] = type(cfg.algo_params).__module__ + "." + type(cfg.algo_params).__name__
out["scale"] = cfg.algo_params.toy_reward_scale
save_cfg(cfg, Path(train_dir) / "cfg.json")
saved = json.loads((Path(train_dir) / "cfg.json").read_text())
out["saved"] = {k: saved.get(k) for k in ("toy_reward_scale", "toy_hidden", "ppo_clip_ratio")}
out["rebuilt"] = rebuild_cfg(saved).algo_params.toy_reward_scale
for name, argv in {
    "hidden": [*base, "--toy_hidden=0"],
    "appo_flag": [*base, "--ppo_clip_ratio=0.2"],
    "toy_flag_with_appo": ["--env=CartPole-v1", f"--train_dir={train_dir}", "--toy_hidden=8"],
}.items():
    try:
        parse_cfg(argv)
        out[name] = None
    except ConfigError as e:
        out[name] = [e.field, str(e)]
print("RESULT " + json.dumps(out))
"""


def test_the_toy_algorithms_section_is_owned_by_its_folder(tmp_path):
    """The toy's section (`params.py` in its folder, nothing in `surge/`): its flags parse, show in
    `--help` under the algorithm's name, its declared range (`toy_hidden`, `low=1`) is checked with
    the generated message, cfg.json holds its flags flat and rebuilds the section; APPO's flags
    (its section, `surge/algorithms/appo/config.py`) are refused with the toy, and the toy's with APPO."""
    code = tmp_path / "code"
    _write_package(code)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), str(ROOT)])}
    env.update(SDL_VIDEODRIVER="dummy", SDL_AUDIODRIVER="dummy")
    run = [sys.executable, "-c", SECTION_PROBE, str(tmp_path / "train")]
    done = subprocess.run(run, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads(done.stdout.split("RESULT ", 1)[1])
    assert out["section"] == "toy_pg.params.ToyPGParams" and out["scale"] == 0.5
    assert out["saved"] == {"toy_reward_scale": 0.5, "toy_hidden": 16, "ppo_clip_ratio": None}
    assert out["rebuilt"] == 0.5
    field, message = out["hidden"]
    assert field == "toy_hidden" and "must be a positive integer, got 0" in message
    field, message = out["appo_flag"]
    assert field == "ppo_clip_ratio" and "--algo=APPO" in message
    field, message = out["toy_flag_with_appo"]
    assert field == "toy_hidden" and "TOY_PG" in message
    helped = subprocess.run(
        [sys.executable, "-m", "surge.train", "--env=CartPole-v1", "--algo=toy_pg:TOY_PG", "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert helped.returncode == 0, helped.stderr[-4000:]
    group = helped.stdout.split("algorithm toy_pg:TOY_PG:", 1)[1]
    assert "--toy_reward_scale" in group and "--toy_hidden" in group
    assert "--ppo_clip_ratio" not in helped.stdout  # APPO's, not the toy's
