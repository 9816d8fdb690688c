"""An inference worker like another (the same model, buffers, act and actors), for tests that
compare the paths of `surge.sampling.inference.InferenceWorker` on the same buffers."""

from __future__ import annotations

from typing import Any

from surge.sampling.inference import InferenceWorker


def twin(inference: InferenceWorker, **kwargs: Any) -> InferenceWorker:
    """A new worker on `inference`'s model, buffers, device, act and actors; `kwargs` go to
    `InferenceWorker` (`cuda_graphs=True`: the graphed path, run eagerly off a GPU)."""
    return InferenceWorker(
        inference.model,
        inference.buffers,
        inference.device,
        inference.act,
        num_actors=inference.num_actors,
        reads_obs=inference.reads_obs,
        **kwargs,
    )
