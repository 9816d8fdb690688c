"""Recurrent cores (GRU, LSTM) and the identity core, with hidden-state resets at episode ends.

The hidden state of one agent is stored flat: `[B, rnn_state_size]` float32 where
`rnn_state_size = layers × hidden` for GRU and `2 × layers × hidden` for LSTM (h then c).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class IdentityCore(nn.Module):
    """No recurrence: features pass through; the hidden state is empty `[B, 0]`."""

    def __init__(self, in_size: int):
        super().__init__()
        self.out_size = in_size
        self.state_size = 0

    def step(self, x: Tensor, state: Tensor) -> tuple[Tensor, Tensor]:
        return x, state

    def sequence(self, x: Tensor, chunk_states: Tensor, dones: Tensor, recurrence: int) -> Tensor:
        return x


class RnnCore(nn.Module):
    """A GRU or LSTM core.

    `step` advances one time step for inference; `sequence` runs a whole trajectory for learning
    with truncated BPTT: at every `recurrence`-th step the state is replaced by the stored
    behavior state (detached), and after an episode end (`dones[t-1]`) it restarts from zeros.
    """

    def __init__(self, in_size: int, hidden: int, rnn_type: str, num_layers: int):
        super().__init__()
        self.is_lstm = rnn_type == "lstm"
        cls = nn.LSTM if self.is_lstm else nn.GRU
        self.rnn = cls(in_size, hidden, num_layers=num_layers)
        self.hidden, self.num_layers = hidden, num_layers
        self.out_size = hidden
        self.state_size = hidden * num_layers * (2 if self.is_lstm else 1)

    def _unflatten(self, state: Tensor):
        b = state.shape[0]
        if self.is_lstm:
            h, c = state.view(b, 2, self.num_layers, self.hidden).permute(1, 2, 0, 3)
            return h.contiguous(), c.contiguous()
        return state.view(b, self.num_layers, self.hidden).transpose(0, 1).contiguous()

    def _flatten(self, state) -> Tensor:
        if self.is_lstm:
            h, c = state
            return torch.stack([h, c]).permute(2, 0, 1, 3).reshape(h.shape[1], -1)
        return state.transpose(0, 1).reshape(state.shape[1], -1)

    def step(self, x: Tensor, state: Tensor) -> tuple[Tensor, Tensor]:
        """x `[B, in]`, state `[B, state_size]` -> (out `[B, hidden]`, new state `[B, state_size]`)."""
        out, new = self.rnn(x.unsqueeze(0), self._unflatten(state))
        return out.squeeze(0), self._flatten(new)

    def sequence(self, x: Tensor, chunk_states: Tensor, dones: Tensor, recurrence: int) -> Tensor:
        """Runs the core over trajectories.

        Args:
            x: `[T, B, in]` float32 features.
            chunk_states: `[T, B, state_size]` stored behavior states; row t is used where t % recurrence == 0.
            dones: `[T, B]` float32, 1 where the episode ended at that step (state restarts after it).
            recurrence: BPTT chunk length.
        Returns:
            `[T, B, hidden]` core outputs.
        """
        T = x.shape[0]
        keep = 1.0 - dones
        outs = []
        for start in range(0, T, recurrence):
            end = min(start + recurrence, T)
            state = self._unflatten(chunk_states[start].detach())
            if not bool(dones[start : end - 1].any()):
                out, _ = self.rnn(x[start:end], state)
                outs.append(out)
                continue
            for t in range(start, end):
                out, state = self.rnn(x[t : t + 1], state)
                outs.append(out)
                if t + 1 < end:
                    m = keep[t].view(1, -1, 1)
                    state = (state[0] * m, state[1] * m) if self.is_lstm else state * m
        return torch.cat(outs, dim=0)


#: a core: `step`, `sequence`, `out_size` and `state_size` (ints)
Core = RnnCore | IdentityCore


def make_core(use_rnn: bool, in_size: int, hidden: int, rnn_type: str, num_layers: int) -> Core:
    """`RnnCore` when `use_rnn`, else `IdentityCore`."""
    if use_rnn:
        return RnnCore(in_size, hidden, rnn_type, num_layers)
    return IdentityCore(in_size)
