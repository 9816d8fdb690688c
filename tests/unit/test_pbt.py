"""PBT's exploit and explore rules (surge.population.pbt) against hand-computed cases from Sample
Factory's rules (`sample_factory/pbt/population_based_training.py`, `_update_policy`)."""

import json
import math

import pytest

from surge.app.resolve import parse_cfg
from surge.cfg.config import flag_value
from surge.errors import ConfigError
from surge.population.pbt import PopulationBasedTraining, tuned_names
from surge.runtime.commands import ReplacePolicy, SetHyperparams
from surge.sampling.objective import episode_statistic
from surge.sampling.rollout_worker import EpisodeStats


def _cfg(*extra, P=4):
    return parse_cfg(["--env=CartPole-v1", f"--num_policies={P}", "--with_pbt=True", "--seed=0", *extra])


def _pbt(objectives, *extra, tmp_path=None):
    cfg = _cfg(*extra, P=len(objectives))
    sent = []
    pbt = PopulationBasedTraining(
        cfg, sent.append, None, None if tmp_path is None else tmp_path / "pbt_log.jsonl"
    )
    pbt.hyperparams = [{n: float(flag_value(cfg, n)) for n in pbt.names} for _ in objectives]
    for p, values in enumerate(objectives):
        pbt.objectives[p].extend(values)
    return pbt, sent


def test_best_and_worst_fractions_are_rounded_up():
    # means 10, 50, 30, 5 -> order 1, 2, 0, 3; ceil(0.3 * 4) = 2 best and 2 worst
    pbt, _ = _pbt([[5, 15], [50], [30], [5]])
    means, best, worst = pbt.ranking()
    assert means == [10.0, 50.0, 30.0, 5.0]
    assert best == [1, 2] and worst == [0, 3]
    pbt, _ = _pbt([[1]] * 5, "--pbt_replace_fraction=0.2")
    assert len(pbt.ranking()[1]) == 1  # ceil(0.2 * 5) = 1; ties: the higher id ranks first
    assert pbt.ranking()[1] == [4] and pbt.ranking()[2] == [0]


def test_a_worst_policy_copies_a_best_one_when_both_gaps_pass_then_is_perturbed():
    pbt, sent = _pbt(
        [[10], [50], [30], [5]], "--pbt_mutation_rate=1", "--pbt_perturb_min=2", "--pbt_perturb_max=2"
    )
    pbt.rng.choice = lambda seq: seq[0]  # the candidate: policy 1 (objective 50)
    record = pbt.update_policy(3, env_frames=1000)
    # delta = 45, relative 45 / 50 = 0.9 > 0.1, absolute 45 > 1e-6: replaced
    assert sent[0] == ReplacePolicy(3, 1)
    assert isinstance(sent[1], SetHyperparams) and sent[1].policy_id == 3
    base = pbt.hyperparams[1]
    for name, value in sent[1].values.items():  # every value x2 or /2 (rate 1, factor 2)
        assert value in (pytest.approx(base[name] * 2), pytest.approx(base[name] / 2)), name
    assert record["event"] == "replace" and record["source"] == 1 and record["env_frames"] == 1000
    assert record["gap"]["absolute"] == 45 and record["gap"]["relative"] == pytest.approx(0.9)
    assert not pbt.objectives[3]  # the replaced policy's past episodes are forgotten


@pytest.mark.parametrize(
    ("flags", "candidate", "replaced"),
    [
        (["--pbt_replace_reward_gap=0.95"], 0, False),  # relative 0.9 < 0.95
        (["--pbt_replace_reward_gap_absolute=30"], 0, True),  # policy 1: 45 > 30
        (["--pbt_replace_reward_gap_absolute=30"], 1, False),  # policy 2: 25 < 30
        (["--pbt_replace_reward_gap=0.85"], 1, False),  # policy 2: 25 / 30 = 0.833 < 0.85
        (["--pbt_replace_reward_gap=0.8"], 1, True),
    ],
)
def test_the_replacement_needs_both_the_relative_and_the_absolute_gap(flags, candidate, replaced):
    pbt, sent = _pbt([[10], [50], [30], [5]], "--pbt_mutation_rate=0", *flags)
    pbt.rng.choice = lambda seq: seq[candidate]
    pbt.update_policy(3, env_frames=0)
    assert any(isinstance(c, ReplacePolicy) for c in sent) == replaced


def test_best_policies_are_left_alone_and_a_middle_one_only_mutates():
    pbt, sent = _pbt([[1], [2], [3], [4], [5]], "--pbt_replace_fraction=0.2", "--pbt_mutation_rate=1")
    assert pbt.update_policy(4, 0) is None and not sent  # the best
    record = pbt.update_policy(2, 0)  # neither best nor worst
    assert [type(c) for c in sent] == [SetHyperparams]
    assert record["event"] == "mutate" and record["source"] == 2 and record["mutated"]
    for name, (old, new) in record["mutated"].items():
        factor = max(new / old, old / new)
        assert 1.1 <= factor <= 1.5, name  # --pbt_perturb_min/max defaults


def test_policy_zero_is_replaced_but_never_perturbed():
    pbt, sent = _pbt([[5], [50], [30], [10]], "--pbt_mutation_rate=1")
    pbt.hyperparams[1]["learning_rate"] = 0.123
    pbt.rng.choice = lambda seq: seq[0]
    pbt.update_policy(0, 0)
    assert sent == [ReplacePolicy(0, 1), SetHyperparams(0, pbt.hyperparams[1])]
    assert pbt.hyperparams[0]["learning_rate"] == 0.123


def test_no_update_before_every_policy_has_an_objective():
    pbt, sent = _pbt([[10], [50], [], [5]], "--pbt_mutation_rate=1")
    assert pbt.update_policy(3, 0) is None and not sent


def test_gamma_moves_one_minus_gamma_by_at_most_20_percent():
    pbt, _ = _pbt([[1], [2]], "--pbt_optimize_gamma=True", "--pbt_mutation_rate=1")
    assert "gamma" in pbt.names
    for _ in range(50):
        new = pbt.perturb_value("gamma", 0.99, 0.99)
        factor = max((1 - new) / 0.01, 0.01 / (1 - new))
        assert 1.01 - 1e-9 <= factor <= 1.2 + 1e-9
    # A2C has no PPO clipping: PBT does not tune it
    assert "ppo_clip_ratio" not in tuned_names(_cfg("--algo=A2C"))


def test_updates_follow_the_frames_each_policy_played(monkeypatch):
    pbt, _ = _pbt([[1], [2]], "--pbt_start_mutation=100", "--pbt_period_env_steps=50")
    calls = []
    monkeypatch.setattr(pbt, "update_policy", lambda p, f: calls.append((p, f)))
    pbt.observe([EpisodeStats(1.0, 40, 0)], frameskip=2)  # policy 0: 80 frames played
    pbt.step(1000)
    assert calls == []  # before --pbt_start_mutation
    pbt.observe([EpisodeStats(1.0, 20, 0)], frameskip=2)  # 120 > 100 and 120 - 0 > 50
    pbt.step(2000)
    assert calls == [(0, 2000)] and pbt.last_update == [120, 0]
    pbt.observe([EpisodeStats(1.0, 25, 0)], frameskip=2)  # 170 - 120 = 50: not more than the period
    pbt.step(3000)
    assert calls == [(0, 2000)]
    pbt.observe([EpisodeStats(1.0, 1, 0)], frameskip=2)
    pbt.step(4000)
    assert calls == [(0, 2000), (0, 4000)]


def test_the_objective_can_be_any_statistic_the_env_reports():
    pbt, _ = _pbt([[], []], "--pbt_target_objective=FRAGCOUNT")
    pbt.observe([EpisodeStats(-3.0, 10, 1, {"FRAGCOUNT": 7.0}), EpisodeStats(9.0, 10, 0, None)], 1)
    assert list(pbt.objectives[1]) == [7.0] and not pbt.objectives[0]
    info = {"episode_extra_stats": {"a": 1}, "a": 2, "b": 3, "game_variables": {"a": 4, "b": 5, "c": 6}}
    assert [episode_statistic(info, k) for k in "abcd"] == [1.0, 3.0, 6.0, None]


def test_state_round_trip_continues_the_same_random_stream(tmp_path):
    pbt, _ = _pbt([[10], [50], [30], [5]], "--pbt_mutation_rate=0.5")
    pbt.frames_played = [1, 2, 3, 4]
    state = json.loads(json.dumps(pbt.state_dict()))
    other, _ = _pbt([[], [], [], []], "--pbt_mutation_rate=0.5")
    other.load_state_dict(state)
    assert other.hyperparams == pbt.hyperparams and other.frames_played == [1, 2, 3, 4]
    assert [list(o) for o in other.objectives] == [[10], [50], [30], [5]]
    assert other.perturb(other.hyperparams[1]) == pbt.perturb(pbt.hyperparams[1])


def test_every_decision_is_appended_to_the_log(tmp_path):
    pbt, _ = _pbt([[10], [50], [30], [5]], tmp_path=tmp_path)
    pbt.rng.choice = lambda seq: seq[0]
    pbt.update_policy(3, 777)
    pbt.save()  # the log is written after the state the record belongs to
    lines = [json.loads(line) for line in (tmp_path / "pbt_log.jsonl").read_text().splitlines()]
    assert lines[-1]["env_frames"] == 777 and lines[-1]["policy"] == 3 and lines[-1]["source"] == 1
    assert math.isclose(lines[-1]["objective"], 5.0) and "hyperparams" in lines[-1]


def test_pbt_flags_are_checked():
    for bad in (
        ["--num_policies=1"],
        ["--pbt_replace_fraction=0.6"],
        ["--pbt_perturb_min=0.9"],
        ["--pbt_perturb_min=2", "--pbt_perturb_max=1.5"],
        ["--pbt_mutation_rate=1.5"],
    ):
        with pytest.raises(ConfigError):
            parse_cfg(["--env=CartPole-v1", "--num_policies=4", "--with_pbt=True", *bad])
    with pytest.raises(ConfigError, match="shared trajectory buffers"):
        parse_cfg(["--env=CartPole-v1", "--pbt_optimize_batch_size=True"])


@pytest.mark.parametrize("start, period", [(20_000_000, 5_000_000), (100, 300), (300, 100), (300, 299)])
def test_a_budget_too_short_for_any_update_is_reported(monkeypatch, start, period):
    """The note names the first frame at which the controller itself updates a policy: one frame
    fewer updates nothing, that frame updates (a policy playing one-frame episodes)."""
    from surge.app.notes import config_notes
    from surge.population.checks import pbt_budget_notes

    flags = [f"--pbt_start_mutation={start}", f"--pbt_period_env_steps={period}"]
    pbt, _ = _pbt([[1], [2]], *flags)
    calls = []
    monkeypatch.setattr(pbt, "update_policy", lambda p, f: calls.append(p))
    first = max(start, period + 1)
    pbt.observe([EpisodeStats(1.0, first - 1, 0)], frameskip=1)
    pbt.step(0)
    assert calls == []
    pbt.observe([EpisodeStats(1.0, 1, 0)], frameskip=1)
    pbt.step(0)
    assert calls == [0]
    # 2 policies share the budget: the run is long enough when each plays the first update's frames
    enough = _cfg(*flags, f"--train_for_env_steps={2 * first}", P=2)
    short = _cfg(*flags, f"--train_for_env_steps={2 * first - 2}", P=2)
    assert pbt_budget_notes(enough) == []
    (note,) = pbt_budget_notes(short)
    assert f"after it played {first} env frames" in note
    assert note in config_notes(short)
    assert (
        pbt_budget_notes(_cfg(*flags, f"--train_for_env_steps={2 * first - 2}", "--with_pbt=False", P=2))
        == []
    )


def test_a_replacement_holds_the_state_and_its_log_until_the_checkpoints_are_written(tmp_path):
    # the caller checkpoints the replaced policy (asynchronously, in the async placement) and
    # releases PBT once it is on disk: until then a kill must find neither a state nor a log line
    # that counts the policy as replaced, or a resume would pair them with its old weights
    cfg = _cfg(P=4)
    state, log_file = tmp_path / "pbt_state.json", tmp_path / "pbt_log.jsonl"
    pbt = PopulationBasedTraining(cfg, lambda cmd: None, state, log_file)
    pbt.start(0)
    before = state.read_text()
    for p, values in enumerate([[10], [50], [30], [5]]):
        pbt.objectives[p].extend(values)
    pbt.frames_played = [cfg.pbt_start_mutation + cfg.pbt_period_env_steps + 1] * 4
    records = pbt.step(1000)
    assert any(r["event"] == "replace" for r in records) and pbt.held
    pbt.save()  # a periodic save meanwhile writes nothing either
    assert state.read_text() == before
    assert [json.loads(line)["event"] for line in log_file.read_text().splitlines()] == ["start"]
    pbt.release()
    assert not pbt.held and json.loads(state.read_text()) == json.loads(json.dumps(pbt.state_dict()))
    logged = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert [r["event"] for r in logged[1:]] == [r["event"] for r in records]
