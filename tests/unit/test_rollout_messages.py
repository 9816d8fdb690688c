"""A replacement rollout worker ignores replies addressed to the process it replaced."""

from queue import Empty

from surge.sampling.rollout_process import _run


class FakeWorker:
    splits = [object(), object()]

    def __init__(self):
        self.advanced: list[int] = []

    def advance(self, s):
        self.advanced.append(s)
        return None

    def start_next_rollout(self, s):
        return True

    def policy_request(self, s):
        return [10 * s], 0

    def pop_episodes(self):
        return []

    def pop_env_steps(self):
        return 0


class Replies:
    """Hands out the given batches of replies, then sets the stop event."""

    def __init__(self, batches, stop):
        self.batches, self.stop = list(batches), stop

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


class Sink:
    def __init__(self):
        self.items = []

    def put(self, item):
        self.items.append(item)


def test_replies_of_an_earlier_incarnation_are_ignored():
    worker, stop, requests = FakeWorker(), Event(), Sink()
    # incarnation 1 of a 2-split worker: tags 0 and 1 belong to incarnation 0, 2 and 3 to this one
    replies = Replies([[0, 3], [1], [2]], stop)
    _run(worker, 5, 1, requests, replies, Sink(), Sink(), stop)
    assert worker.advanced == [1, 0]  # split 1 (tag 3), then split 0 (tag 2); tags 0 and 1 dropped
    assert requests.items == [(5, 3, 10, 1, 0), (5, 2, 0, 1, 0)]  # requests carry this incarnation
