"""The learner state of the seams (issue 20): several optimizers and learner-only modules are
rolled back by the serial placement's batch snapshot, copied by ReplacePolicy, and written into a
dead learner's final checkpoint without a learner being built; the block pool of a REPLAY
algorithm is sized for blocks released at once, and its replay bytes enter the memory check."""

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from surge.app.resolve import parse_cfg  # noqa: E402
from surge.errors import ConfigError  # noqa: E402
from surge.learning.algorithm import Algorithm, Feed, register_algorithm  # noqa: E402
from surge.runtime.commands import ReplacePolicy  # noqa: E402
from surge.runtime.components import blocks_per_split, build_components, env_info  # noqa: E402
from surge.runtime.placement import load_policy_state, policy_state, published_policy_state  # noqa: E402
from surge.runtime.serial import BatchSnapshot, SerialPlacement  # noqa: E402

ARGS = [
    "--env=CartPole-v1",
    "--algo=tests.user_algo_example:USER_AC",
    "--serial_mode=True",
    "--num_workers=1",
    "--num_envs_per_worker=4",
    "--rollout=8",
    "--recurrence=8",
    "--batch_size=32",
    "--num_batches_per_iteration=1",
    "--use_rnn=False",
    "--seed=5",
]


def _states(c, p=0):
    learner = c.learners[p]
    return {
        "model": {k: v.clone() for k, v in c.models[p].state_dict().items()},
        "modules": {
            n: {k: v.clone() for k, v in m.state_dict().items()} for n, m in learner.learner_modules.items()
        },
        "opts": {
            n: {
                i: {k: v.clone() for k, v in s.items() if isinstance(v, torch.Tensor)}
                for i, s in o.state_dict()["state"].items()
            }
            for n, o in learner.optimizers.items()
        },
        "version": learner.policy_version,
        "schedulers": {n: dict(sch.state_dict()) for n, sch in learner.schedulers.items()},
    }


def _equal(a, b) -> bool:
    if isinstance(a, dict):
        return set(a) == set(b) and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    return a == b


def _collect_batch(placement, p=0):
    c = placement.c
    while (slots := placement.sampler.take(p)) is None:
        placement.sampler.step()
    return c, slots


def test_batch_snapshot_undoes_every_optimizer_and_learner_module(tmp_path):
    placement = SerialPlacement(parse_cfg([*ARGS, f"--train_dir={tmp_path}"]), [], [None])
    placement.start()
    c, slots = _collect_batch(placement)
    c.learners[0].train(slots)  # Adam states exist in both optimizers
    placement.sampler.release(slots, 0)
    before = _states(c)
    snap = BatchSnapshot()
    snap.take(c.models[0], c.learners[0])
    c, slots = _collect_batch(placement)
    c.learners[0].train(slots)
    after = _states(c)
    assert not _equal(after["modules"], before["modules"]) and not _equal(
        after["opts"]["critic"], before["opts"]["critic"]
    )
    snap.restore(c.models[0], c.learners[0])
    assert _equal(_states(c), before)
    placement.close()


def test_replace_policy_copies_learner_modules_and_every_optimizer(tmp_path):
    cfg = parse_cfg([*ARGS, f"--train_dir={tmp_path}", "--num_policies=2", "--num_envs_per_worker=4"])
    placement = SerialPlacement(cfg, [], [None, None])
    placement.start()
    c, slots = _collect_batch(placement, 1)
    c.learners[1].train(slots)
    placement.sampler.release(slots, 1)
    source = _states(c, 1)
    placement.send_command(ReplacePolicy(policy_id=0, source_policy_id=1))
    copied = _states(c, 0)
    assert _equal(copied["modules"], source["modules"]) and _equal(copied["opts"], source["opts"])
    assert _equal(copied["model"], source["model"])
    # deep copies: training the source afterwards leaves the replaced policy's critic as it was
    c, slots = _collect_batch(placement, 1)
    c.learners[1].train(slots)
    assert _equal(_states(c, 0)["modules"], copied["modules"])
    placement.close()


def test_dead_learner_final_state_is_written_without_a_learner(tmp_path):
    cfg = parse_cfg([*ARGS, f"--train_dir={tmp_path}"])
    c = build_components(cfg)
    learner = c.learners[0]
    previous = {**policy_state(c.models[0], learner), "rng": None}
    published = {k: v + 1.0 for k, v in c.models[0].state_dict().items()}
    state = published_policy_state(cfg, 0, published, 42, previous)
    assert state["learner"]["policy_version"] == 42 and state["model"] is published
    assert state["learner_modules"] is previous["learner_modules"]
    fresh = build_components(cfg)
    load_policy_state(state, fresh.models[0], fresh.learners[0])
    assert fresh.learners[0].policy_version == 42
    assert _equal(fresh.models[0].state_dict(), published)
    # no earlier checkpoint: no optimizer and no learner module state, the resumed learner keeps its fresh ones
    bare = published_policy_state(cfg, 0, published, 7, None)
    assert set(bare) == {"model", "learner"} and "optimizers" not in bare["learner"]
    load_policy_state(bare, fresh.models[0], fresh.learners[0])
    assert fresh.learners[0].policy_version == 7
    c.close()
    fresh.close()


def _replay_learner(*args, **kwargs):
    raise AssertionError("not built in this test")


register_algorithm(
    Algorithm(
        name="TEST_SEAMS_REPLAY",
        description="a REPLAY algorithm whose replay holds 10 TB",
        step_fields=lambda action_space: [],
        act=lambda model, obs, rnn_states, ctx: {},
        make_learner=_replay_learner,
        feed=Feed.REPLAY,
        replay_bytes=lambda cfg, info: 10**13,
    )
)


def test_replay_feed_pool_and_memory_estimate(tmp_path):
    big = ["--batch_size=4096", "--num_batches_per_iteration=8", "--num_minibatches_to_accumulate=64"]
    appo = parse_cfg(["--env=CartPole-v1", f"--train_dir={tmp_path}", "--rollout=8", "--recurrence=8", *big])
    cfg = parse_cfg(
        [
            "--env=CartPole-v1",
            "--algo=TEST_SEAMS_REPLAY",
            f"--train_dir={tmp_path}",
            "--rollout=8",
            "--recurrence=8",
            *big,
        ]
    )
    assert blocks_per_split(appo, 1) > 10  # on-policy: sized for the batches the learner holds
    assert blocks_per_split(cfg, 1) == 2  # one filling, one on its way into the replay
    with pytest.raises(ConfigError) as e:
        env_info(cfg)  # the replay's 10 TB enter the memory check
    assert e.value.field == "algo" and "replay buffer" in str(e.value)


def test_an_optimizer_over_a_tensor_outside_the_modules_is_refused(tmp_path):
    """The review of the seams: a bare tensor (SAC's log_alpha written as a plain tensor) is
    optimized but not in the checkpoint, so a resume would restore Adam's moments and reset it."""
    from surge.runtime.components import check_optimized_parameters

    c = build_components(parse_cfg([*ARGS, f"--train_dir={tmp_path}"]))
    learner = c.learners[0]
    check_optimized_parameters(learner, "USER_AC")  # the example's modules are all owned
    log_alpha = torch.zeros(1, requires_grad=True)
    learner.optimizers["alpha"] = torch.optim.Adam([log_alpha])
    with pytest.raises(ValueError, match="'alpha' updates a tensor of shape \\(1,\\).*learner_modules"):
        check_optimized_parameters(learner, "USER_AC")
    learner.learner_modules["alpha"] = holder = torch.nn.Module()
    holder.log_alpha = torch.nn.Parameter(torch.zeros(1))
    learner.optimizers["alpha"] = torch.optim.Adam([holder.log_alpha])
    check_optimized_parameters(learner, "USER_AC")
