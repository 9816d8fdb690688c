"""surge: fast reinforcement learning from a lot of experience (APPO with V-trace).

The Python API (`surge.api`): `train(**flags) -> Run` and `load_policy(folder) -> Policy`. They are
bound on first use (PEP 562 `__getattr__`) and import torch and gymnasium only when called, so
`import surge` stays cheap. `surge.train` is also the module of `python -m surge.train`; once that
module is imported it is the package attribute, and calling it calls `surge.api.train`.
"""

from __future__ import annotations

from surge._version import __version__

TYPE_CHECKING = False  # not `typing`'s: importing typing would double the cost of `import surge`
if TYPE_CHECKING:
    from typing import Any

    from surge.api import Run, load_policy, train

__all__ = ["Run", "__version__", "load_policy", "train"]


def __getattr__(name: str) -> Any:
    if name in ("Run", "load_policy", "train"):
        # PEP 562: the API (torch, gymnasium) bound on first use, so `import surge` stays cheap
        from surge import api

        return getattr(api, name)
    raise AttributeError(f"module 'surge' has no attribute {name!r}")
