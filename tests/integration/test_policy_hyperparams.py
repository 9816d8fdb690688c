"""Each policy's own hyper-parameters (`PolicyHyperparams`) and the commands that change them at
runtime (`SetHyperparams`, `ReplacePolicy`), in both placements."""

import copy
import json
import os

import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.errors import ConfigError
from surge.runtime.async_placement import AsyncPlacement
from surge.runtime.checkpoint import CheckpointManager
from surge.runtime.commands import ReplacePolicy, SetHyperparams
from surge.runtime.serial import SerialPlacement

BASE = [
    "--env=CartPole-v1",
    "--experiment=hp",
    "--num_policies=2",
    "--num_workers=2",
    "--num_envs_per_worker=4",
    "--rollout=16",
    "--recurrence=16",
    "--batch_size=64",
    "--use_rnn=False",
    "--encoder_type=mlp",
    "--encoder_subtype=mlp",
    "--encoder_mlp_layers",
    "16",
    "--seed=2",
    "--decorrelate_experience_max_seconds=0",
    "--set_workers_cpu_affinity=False",
]


def _params(model):
    return {k: v.detach().clone() for k, v in model.named_parameters()}


def _same(a, b):
    return all(torch.equal(a[k], b[k]) for k in a)


def _serial(tmp_path, *extra):
    cfg = parse_cfg([*BASE, f"--train_dir={tmp_path}", "--serial_mode=True", *extra])
    ckpts = [CheckpointManager(tmp_path / f"ckpt{p}", 2, p) for p in range(2)]
    placement = SerialPlacement(cfg, ckpts, [None, None])
    placement.start()
    return placement


def _train_both(placement, batches=2):
    """Steps until each learner trained `batches` more batches."""
    c = placement.c
    start = [lr.policy_version for lr in c.learners.values()]
    trained = [0, 0]
    for _ in range(5000):
        report = placement.step()
        for p in report.train_stats:
            trained[p] += 1
        if min(trained) >= batches:
            return [lr.policy_version - v for lr, v in zip(c.learners.values(), start, strict=True)]
    raise AssertionError(f"the learners trained {trained} batches")


def test_a_policy_with_learning_rate_zero_keeps_its_weights_while_the_other_learns(tmp_path):
    placement = _serial(tmp_path, "--policy_hyperparams", json.dumps({"0": {"learning_rate": 0.0}}))
    c = placement.c
    before = [_params(m) for m in c.models]
    assert (
        c.learners[0].hp.learning_rate == 0.0
        and c.learners[1].hp.learning_rate == placement.cfg.learning_rate > 0
    )
    steps = _train_both(placement)
    assert min(steps) > 0  # both took optimizer steps ...
    assert _same(before[0], _params(c.models[0]))  # ... policy 0's with a step size of 0
    assert not _same(before[1], _params(c.models[1]))
    # the learners do not share one hyper-parameter object (nor the cfg's values)
    c.learners[1].set_hyperparams({"gamma": 0.5})
    assert c.learners[0].hp.gamma == placement.cfg.gamma == 0.99
    placement.close()


def test_set_hyperparams_takes_effect_at_the_next_batch_and_is_checked(tmp_path):
    placement = _serial(tmp_path)
    c = placement.c
    _train_both(placement, 1)
    placement.send_command(SetHyperparams(1, {"learning_rate": 0.0, "adam_beta1": 0.5}))
    assert c.learners[1].optimizer.param_groups[0]["betas"] == (0.5, 0.999)
    before = [_params(m) for m in c.models]
    _train_both(placement)
    assert _same(before[1], _params(c.models[1])) and not _same(before[0], _params(c.models[0]))
    for bad in (SetHyperparams(1, {"lr": 1.0}), SetHyperparams(1, {"gamma": 2.0}), SetHyperparams(5, {})):
        with pytest.raises(ValueError):
            placement.send_command(bad)
    with pytest.raises(ValueError, match="itself"):
        placement.send_command(ReplacePolicy(0, 0))
    placement.close()


def test_replace_policy_copies_weights_optimizer_and_hyperparams_and_keeps_the_version_rising(tmp_path):
    placement = _serial(tmp_path, "--policy_hyperparams", json.dumps({"0": {"learning_rate": 3e-4}}))
    c = placement.c
    _train_both(placement, 2)
    src_state = copy.deepcopy(c.learners[0].optimizer.state_dict())
    version_before = c.learners[1].policy_version
    placement.send_command(ReplacePolicy(1, 0))
    assert _same(_params(c.models[0]), _params(c.models[1]))
    s0, s1 = c.models[0].state_dict(), c.models[1].state_dict()
    assert all(torch.equal(s0[k], s1[k]) for k in s0)  # normalisers too
    assert c.learners[1].hp == c.learners[0].hp and c.learners[1].hp is not c.learners[0].hp
    assert c.learners[1].policy_version == version_before + 1  # not policy 0's version
    assert c.inferences[1].policy_version == c.learners[1].policy_version
    dst_state = c.learners[1].optimizer.state_dict()
    for i, s in src_state["state"].items():  # equal Adam moments ...
        assert torch.equal(s["exp_avg"], dst_state["state"][i]["exp_avg"])

    p0 = next(iter(c.learners[0].optimizer.state.values()))["exp_avg"]
    p1 = next(iter(c.learners[1].optimizer.state.values()))["exp_avg"]
    assert p0.data_ptr() != p1.data_ptr()  # ... not shared tensors
    _train_both(placement, 1)  # they train apart again
    placement.close()


def test_policy_hyperparams_flag_is_checked_before_the_run():
    for bad in ('{"2": {"gamma": 0.9}}', '{"0": {"lr": 1}}', "[1]", "{", '{"0": {"gamma": 1.5}}'):
        with pytest.raises(ConfigError, match="policy_hyperparams"):
            parse_cfg([*BASE, "--policy_hyperparams", bad])


@pytest.mark.slow
def test_async_commands_reach_the_learner_processes(tmp_path):
    # policy 0 never changes its weights (lr 0); policy 1 learns, then is replaced by policy 0:
    # it must end with policy 0's weights and hyper-parameters, its own version still rising, and
    # the values of a SetHyperparams sent while the replacement was in flight (applied after it)
    cfg = parse_cfg(
        [
            *BASE,
            f"--train_dir={tmp_path}",
            "--serial_mode=False",
            "--policy_hyperparams",
            '{"0": {"learning_rate": 0}}',
        ]
    )
    ckpts = [CheckpointManager(tmp_path / f"ckpt{p}", 2, p) for p in range(2)]
    placement = AsyncPlacement(cfg, ckpts, [None, None])
    counters = {"env_steps": 0, "env_frames": 0, "train_seconds": 0.0, "best_return": 0.0}
    try:
        placement.start()
        trained = [0, 0]
        while min(trained) < 2:
            for p in placement.step().train_stats:
                trained[p] += 1
        placement.save("checkpoint", counters, policy_id=1)
        placement.send_command(ReplacePolicy(1, 0))
        placement.send_command(SetHyperparams(1, {"value_loss_coeff": 0.25}))
        placement.send_command(SetHyperparams(0, {"exploration_loss_coeff": 0.01}))
        while not placement.replaced:
            placement.step()
        # the exported state is removed once imported (a long PBT run would pile them up)
        assert placement.exchange_dir is not None and not os.listdir(placement.exchange_dir)
        for _ in range(20):
            placement.step()
        placement.save("final", counters)
    finally:
        placement.close()
    first1 = torch.load(sorted(ckpts[1].folder.glob("checkpoint_*"))[0], weights_only=True)
    last = [torch.load(ckpts[p].latest(), weights_only=True) for p in range(2)]
    # weights only: the normalisers' statistics go on with each learner's own batches
    model0, model1 = ({k: v for k, v in s["model"].items() if "normalizer" not in k} for s in last)
    assert not all(torch.equal(first1["model"][k], model0[k]) for k in model0)  # they differed before
    assert all(torch.equal(model0[k], model1[k]) for k in model0)
    hp0, hp1 = last[0]["learner"]["hyperparams"], last[1]["learner"]["hyperparams"]
    assert hp1["learning_rate"] == 0.0 and hp1["value_loss_coeff"] == 0.25
    assert hp0["exploration_loss_coeff"] == 0.01 and hp0["value_loss_coeff"] == cfg.value_loss_coeff
    assert last[1]["learner"]["policy_version"] > first1["learner"]["policy_version"]
    assert placement.replaced[0].policy_id == 1 and placement.replaced[0].source_policy_id == 0


def test_a_checkpoint_restores_the_policys_own_hyperparams(tmp_path):
    placement = _serial(tmp_path)
    c = placement.c
    c.learners[1].set_hyperparams({"learning_rate": 0.02, "gamma": 0.9, "adam_beta2": 0.99})
    state = c.learners[1].state_dict()
    c.learners[0].load_state_dict(state)  # a fresh learner of the same model would do the same
    assert c.learners[0].hp == c.learners[1].hp and c.learners[0].hp.gamma == 0.9
    assert c.learners[0].optimizer.param_groups[0]["betas"] == (0.9, 0.99)
    assert c.learners[0].policy_version == c.learners[1].policy_version
    placement.close()
