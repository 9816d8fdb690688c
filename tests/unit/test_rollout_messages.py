"""The rollout process's message handling: a replacement worker ignores replies addressed to the
process it replaced, with several policies a split advances only once every acting policy's
inference answered, a reply that is not awaited (stale, or a second answer) is ignored, and the
unanswered requests are sent again to a replaced inference worker."""

from queue import Empty
from types import SimpleNamespace

import torch

from surge.runtime.messages import ActionsReady, BlockReady, PolicyRequest
from surge.runtime.process_context import RolloutContext
from surge.runtime.rollout_process import SEQ, _run

SPLITS = 2


def tag(incarnation: int, seq: int, split: int) -> int:
    """A request's tag as the protocol defines it (see `surge.runtime.rollout_process`)."""
    return (incarnation * SEQ + seq) * SPLITS + split


class FakeWorker:
    # split s fills the one slot 10 * s (policy_request)
    splits = [SimpleNamespace(index=slice(10 * s, 10 * s + 1)) for s in range(SPLITS)]

    def __init__(self, policies=(0,), finish=False):
        self.advanced: list[int] = []
        self.policies, self.finish = list(policies), finish

    def advance(self, s):
        self.advanced.append(s)
        return [10 * s] if self.finish else None

    def hand_over(self, s, slots):
        return {p: None for p in self.policies}

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
    """Hands out the given batches of replies `(tag, policy_id)` (a bare tag: policy 0) as plain
    tuples, calling `before[i]()` before batch i if given, then sets the stop event."""

    def __init__(self, batches, stop, before=None):
        self.batches = [
            [tuple(ActionsReady(*r) if isinstance(r, tuple) else ActionsReady(r, 0)) for r in b]
            for b in batches
        ]
        self.stop, self.before, self.i = stop, before or {}, 0

    def get_many(self, timeout=None, block=True):
        if not self.batches:
            self.stop.set()
            raise Empty
        if self.i in self.before:
            self.before[self.i]()
        self.i += 1
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
        stop_flag=stop,
        report_queue=Sink(),
        env_steps=torch.zeros(6, dtype=torch.int64),
        env_steps_budget=torch.tensor([2**62]),
        heartbeats=torch.zeros(6 + num_policies, dtype=torch.float64),
        inference_generation=torch.zeros(num_policies, dtype=torch.int64),
        inference_restarts=torch.zeros(1, dtype=torch.int64),
        inference_index=lambda p, i: p,
    )
    requests = [[Sink()] for _ in range(num_policies)]
    learners = [Sink() for _ in range(num_policies)]
    return RolloutContext(shared, 5, incarnation, requests, replies, learners)  # type: ignore[arg-type]


def test_replies_of_an_earlier_incarnation_are_ignored():
    worker, stop = FakeWorker(), Event()
    # incarnation 1 of a 2-split worker: replies to incarnation 0's requests are dropped
    replies = Replies([[tag(0, 1, 0), tag(1, 1, 1)], [tag(0, 1, 1)], [tag(1, 1, 0)]], stop)
    ctx = _ctx(replies, stop, incarnation=1)
    _run(ctx, worker)
    assert worker.advanced == [1, 0]
    sent = ctx.request_queues[0][0].items
    assert sent[:2] == [PolicyRequest(5, tag(1, 1, 0), 0, 1, 0), PolicyRequest(5, tag(1, 1, 1), 10, 1, 0)]
    # after each advance the split's next request has the next sequence number
    assert sent[2:] == [PolicyRequest(5, tag(1, 2, 1), 10, 1, 0), PolicyRequest(5, tag(1, 2, 0), 0, 1, 0)]


def test_a_split_waits_for_every_acting_policy_and_its_block_goes_to_each_learner():
    worker, stop = FakeWorker(policies=(0, 1), finish=True), Event()
    replies = Replies([[(tag(0, 1, 0), 0)], [(tag(0, 1, 0), 1)], [(tag(0, 2, 0), 0)]], stop)
    ctx = _ctx(replies, stop, num_policies=2)
    _run(ctx, worker)
    # split 0 is asked of both policies' inference and advances after the second reply only
    assert worker.advanced == [0]
    assert [len(q[0].items) for q in ctx.request_queues] == [3, 3]  # 2 first requests + 1 after advance
    assert ctx.learner_queues[0].items == ctx.learner_queues[1].items == [BlockReady(0, None)]


def test_a_second_answer_from_one_policy_or_a_stale_reply_does_not_advance_the_split():
    worker, stop = FakeWorker(policies=(0, 1)), Event()
    stale = tag(0, SEQ - 1, 0)  # an earlier request of split 0
    replies = Replies([[(tag(0, 1, 0), 0)], [(tag(0, 1, 0), 0), (stale, 1)], [(tag(0, 1, 0), 1)]], stop)
    _run(_ctx(replies, stop, num_policies=2), worker)
    assert worker.advanced == [0]  # only once policy 1 answered the current request


def test_unanswered_requests_are_sent_again_to_a_replaced_inference_worker():
    worker, stop = FakeWorker(), Event()
    replies = Replies([[tag(0, 1, 0)], [], [tag(0, 2, 0), tag(0, 1, 1)]], stop)
    ctx = _ctx(replies, stop)

    def replace_inference():  # what the main process does when it replaces inference worker 0
        ctx.shared.inference_generation[0] += 1
        ctx.shared.inference_restarts[0] += 1

    replies.before[1] = replace_inference
    _run(ctx, worker)
    sent = ctx.request_queues[0][0].items
    first = [PolicyRequest(5, tag(0, 1, 0), 0, 1, 0), PolicyRequest(5, tag(0, 1, 1), 10, 1, 0)]
    after_advance = PolicyRequest(5, tag(0, 2, 0), 0, 1, 0)
    # split 0's second request and split 1's first were unanswered when the replacement came
    assert sent == [*first, after_advance, after_advance, first[1], *sent[5:]]
    assert worker.advanced == [0, 0, 1]


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
    replies = [[tag(0, 1, 0)], [tag(0, 1, 1)], [tag(0, 2, 0)], [tag(0, 2, 1)], [tag(0, 3, 0)]]
    ctx = _ctx(Replies(replies, stop), stop)
    ctx.shared.env_steps[2] = 3  # another worker's steps count toward the budget too
    ctx.shared.env_steps_budget[0] = 3 + 8
    _run(ctx, worker)
    assert worker.advanced == [0, 1]  # 2 advances x 4 steps reach the budget: no third one
    assert int(ctx.shared.env_steps[5]) == 8
