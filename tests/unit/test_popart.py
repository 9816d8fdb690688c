"""PopArt's output-preserving rescale (`surge.learning.popart`; van Hasselt et al. 2016, eq. 6-7):
the critic's values in return units are the same before and after the statistics move."""

from __future__ import annotations

import torch
from torch import nn

from surge.learning.popart import preserve_outputs


def test_denormalised_outputs_do_not_move_with_the_statistics():
    torch.manual_seed(0)
    head = nn.Linear(16, 1)
    h = torch.randn(32, 16)
    mean0, std0 = torch.tensor(3.0), torch.tensor(0.5)
    mean1, std1 = torch.tensor(40.0), torch.tensor(12.0)
    w0 = head.weight.detach().clone()
    with torch.no_grad():
        before = std0 * head(h) + mean0  # return units under the old statistics
        preserve_outputs(head, mean0, std0, mean1, std1)
        after = std1 * head(h) + mean1  # ... under the new ones
    torch.testing.assert_close(after, before, rtol=1e-5, atol=1e-4)
    assert not torch.allclose(head.weight, w0)  # the head itself did change


def test_unchanged_statistics_leave_the_head_alone():
    torch.manual_seed(1)
    head = nn.Linear(8, 3)
    w, b = head.weight.detach().clone(), head.bias.detach().clone()
    stat = (torch.tensor(-2.0), torch.tensor(7.0))
    preserve_outputs(head, *stat, *stat)
    torch.testing.assert_close(head.weight, w)
    torch.testing.assert_close(head.bias, b)
