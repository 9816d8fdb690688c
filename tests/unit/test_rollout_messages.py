"""The rollout process's message handling: a replacement worker ignores replies addressed to the
process it replaced, and with several policies a split advances only once every acting policy's
inference answered."""

from queue import Empty
from types import SimpleNamespace

import torch

from surge.runtime.messages import ActionsReady, BlockReady, PolicyRequest
from surge.runtime.process_context import RolloutContext
from surge.runtime.rollout_process import _run


class FakeWorker:
    splits = [object(), object()]

    def __init__(self, policies=(0,), finish=False):
        self.advanced: list[int] = []
        self.policies, self.finish = list(policies), finish

    def advance(self, s):
        self.advanced.append(s)
        return [10 * s] if self.finish else None

    def hand_over(self, s, slots):
        return self.policies

    def start_next_rollout(self, s):
        return True

    def policy_request(self, s):
        return [10 * s], 0

    def request_policies(self, s):
        return self.policies

    def pop_episodes(self):
        return []

    def pop_env_steps(self):
        return 0


class Replies:
    """Hands out the given batches of replies, then sets the stop event."""

    def __init__(self, batches, stop):
        self.batches, self.stop = [[ActionsReady(t) for t in b] for b in batches], stop

    def get_many(self, timeout=None, block=True):
        if not self.batches:
            self.stop.set()
            raise Empty
        return self.batches.pop(0)


class Event:
    def __init__(self):
        self.flag = False

    def set(self):
        self.flag = True

    def is_set(self):
        return self.flag

    def wait(self, timeout=None):  # the main process stops the run while the worker waits
        self.flag = True
        return True


class Sink:
    def __init__(self):
        self.items = []

    def put(self, item):
        self.items.append(item)


def _ctx(replies, stop, num_policies=1, incarnation=0):
    shared = SimpleNamespace(
        stop_event=stop,
        report_queue=Sink(),
        env_steps=torch.zeros(6, dtype=torch.int64),
        env_steps_budget=torch.tensor([2**62]),
    )
    requests = [[Sink()] for _ in range(num_policies)]
    learners = [Sink() for _ in range(num_policies)]
    return RolloutContext(shared, 5, incarnation, requests, replies, learners)  # type: ignore[arg-type]


def test_replies_of_an_earlier_incarnation_are_ignored():
    worker, stop = FakeWorker(), Event()
    # incarnation 1 of a 2-split worker: tags 0 and 1 belong to incarnation 0, 2 and 3 to this one
    ctx = _ctx(Replies([[0, 3], [1], [2]], stop), stop, incarnation=1)
    _run(ctx, worker)
    assert worker.advanced == [1, 0]  # split 1 (tag 3), then split 0 (tag 2); tags 0 and 1 dropped
    sent = ctx.request_queues[0][0].items
    assert sent[:2] == [PolicyRequest(5, 2, 0, 1, 0), PolicyRequest(5, 3, 10, 1, 0)]  # first requests
    assert sent[2:] == [PolicyRequest(5, 3, 10, 1, 0), PolicyRequest(5, 2, 0, 1, 0)]  # after each advance


def test_a_split_waits_for_every_acting_policy_and_its_block_goes_to_each_learner():
    worker, stop = FakeWorker(policies=(0, 1), finish=True), Event()
    ctx = _ctx(Replies([[0], [1], [0]], stop), stop, num_policies=2)
    _run(ctx, worker)
    # split 0 is asked of both policies' inference and advances after the second reply only
    assert worker.advanced == [0]
    assert [len(q[0].items) for q in ctx.request_queues] == [3, 3]  # 2 first requests + 1 after advance
    assert ctx.learner_queues[0].items == ctx.learner_queues[1].items == [BlockReady(0)]


class SteppingWorker(FakeWorker):
    """Each advance takes 4 env steps."""

    def __init__(self):
        super().__init__()
        self.steps = 0

    def advance(self, s):
        self.steps += 4
        return super().advance(s)

    def pop_env_steps(self):
        steps, self.steps = self.steps, 0
        return steps


def test_env_steps_are_counted_in_shared_memory_and_the_worker_stops_at_the_budget():
    worker, stop = SteppingWorker(), Event()
    ctx = _ctx(Replies([[0], [1], [0], [1], [0]], stop), stop)
    ctx.shared.env_steps[2] = 3  # another worker's steps count toward the budget too
    ctx.shared.env_steps_budget[0] = 3 + 8
    _run(ctx, worker)
    assert worker.advanced == [0, 1]  # 2 advances x 4 steps reach the budget: no third one
    assert int(ctx.shared.env_steps[5]) == 8
