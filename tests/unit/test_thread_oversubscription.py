"""The async placement warns in the run's log when its model processes ask for more torch threads
than there are cores (docs/threads.md: `--num_torch_threads=2` on the 2-core machine ran the
CartPole benchmark config at 1150 env frames/s against 12356 with the default)."""

from surge.app.resolve import parse_cfg
from surge.runtime.async_placement import thread_oversubscription


def _cfg(*flags):
    return parse_cfg(["--env=cartpole", *flags])


def test_the_default_one_thread_per_process_is_never_warned_about():
    assert thread_oversubscription(_cfg("--policy_workers_per_policy=4"), num_learners=1, cores=2) is None


def test_two_threads_in_a_learner_and_two_inference_workers_on_two_cores_are_warned_about():
    note = thread_oversubscription(
        _cfg("--num_torch_threads=2", "--policy_workers_per_policy=2"), num_learners=1, cores=2
    )
    assert note is not None
    assert "1 learner(s) x 2 + 2 inference worker(s) x 2 torch threads on 2 cores" in note
    assert "--num_torch_threads=1" in note


def test_threads_that_fit_the_cores_are_not_warned_about():
    cfg = _cfg("--num_torch_threads=2", "--policy_workers_per_policy=1")
    assert thread_oversubscription(cfg, num_learners=1, cores=8) is None  # 2 + 2 of 8 cores


def test_zero_gives_the_learner_one_thread_per_core_and_inference_one():
    note = thread_oversubscription(_cfg("--num_torch_threads=0"), num_learners=1, cores=4)
    assert note is not None and "1 learner(s) x 4 + 1 inference worker(s) x 1" in note
