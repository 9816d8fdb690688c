"""Shared helper of the learner tests: the first batch a serial sampler collects."""

from __future__ import annotations

from typing import Any

from surge.runtime.serial import SerialSampler


def first_batch(components: Any) -> tuple[SerialSampler, Any]:
    """Steps a `SerialSampler` over `components` (`build_components`) until a batch is ready;
    returns the sampler and the batch's slots (release them with `sampler.release(slots)`)."""
    sampler = SerialSampler(components)
    slots = None
    while slots is None:
        sampler.step()
        slots = sampler.take()
    return sampler, slots
