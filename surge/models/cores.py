"""Recurrent cores (GRU, LSTM) and the identity core, with hidden-state resets at episode ends.

The hidden state of one agent is stored flat: `[B, rnn_state_size]` float32 where
`rnn_state_size = layers × hidden` for GRU and `2 × layers × hidden` for LSTM (h then c).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence

from surge.models.rnn_packing import plan_packing


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


def cell_step(rnn: nn.GRU | nn.LSTM, x: Tensor, state: Any) -> tuple[Tensor, Any]:
    """One time step of `rnn` (unidirectional, batch second, no dropout between layers at
    inference) by `torch.gru_cell` / `torch.lstm_cell`, layer after layer.

    Args:
        rnn: the module whose weights are used (`weight_ih_l{k}`, `weight_hh_l{k}`, biases).
        x: `[B, in]` float input of the first layer.
        state: GRU `h` `[layers, B, hidden]`; LSTM `(h, c)`, each `[layers, B, hidden]`.
    Returns:
        (the last layer's output `[B, hidden]`, the new state shaped as `state`): what
        `rnn(x.unsqueeze(0), state)` gives, its output squeezed.
    """
    is_lstm = isinstance(rnn, nn.LSTM)
    hs, cs = [], []
    for k in range(rnn.num_layers):
        w = (getattr(rnn, f"weight_ih_l{k}"), getattr(rnn, f"weight_hh_l{k}"))
        b = (getattr(rnn, f"bias_ih_l{k}"), getattr(rnn, f"bias_hh_l{k}")) if rnn.bias else (None, None)
        if is_lstm:
            h, c = torch.lstm_cell(x, (state[0][k], state[1][k]), *w, *b)
            cs.append(c)
        else:
            h = torch.gru_cell(x, state[k], *w, *b)
        hs.append(h)
        x = h
    h_all = torch.stack(hs)
    return x, ((h_all, torch.stack(cs)) if is_lstm else h_all)


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
        """x `[B, in]`, state `[B, state_size]` -> (out `[B, hidden]`, new state `[B, state_size]`).

        On a GPU the step runs layer by layer through `torch.gru_cell` / `torch.lstm_cell` (the
        same equations as `nn.GRU` / `nn.LSTM`) rather than cuDNN's RNN call: plain kernels, which
        a CUDA graph of the inference pass captures (`surge.sampling.graphed_act`). On the CPU
        `nn.GRU`'s one step decomposes into those operations anyway."""
        if x.is_cuda:
            out, new = cell_step(self.rnn, x, self._unflatten(state))
            return out, self._flatten(new)
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
        d = dones.detach().to("cpu", torch.float32).numpy()  # one device sync, as the `.any()` it replaced
        cuts = sorted(set(range(0, T, recurrence)) | {int(t) + 1 for t in np.flatnonzero(d[:-1].any(axis=1))})
        # On a GPU one packed call (one cuDNN call each way) beats a call per time range; on a CPU the
        # time ranges are faster until they are short (bench: 32 steps x 32 envs, hidden 512).
        ends_inside = len(cuts) > -(-T // recurrence)  # more cuts than chunk starts
        if ends_inside and (x.is_cuda or len(cuts) > max(2, T // 2)):
            return self.sequence_packed(x, chunk_states, d, recurrence)
        return self.sequence_split(x, chunk_states, dones, recurrence, cuts)

    def sequence_split(
        self, x: Tensor, chunk_states: Tensor, dones: Tensor, recurrence: int, cuts: list[int]
    ) -> Tensor:
        """`sequence` as one RNN call per time range between `cuts` (sorted steps where some column's
        state does not carry on: every chunk start and every step after an episode end).

        x `[T, B, in]`, chunk_states `[T, B, state_size]`, dones `[T, B]` float32 (on x's device);
        returns `[T, B, hidden]`. Raises AssertionError when `cuts` does not start at step 0."""
        T = x.shape[0]
        outs: list[Tensor] = []
        state: Any = None
        for a, b in zip(cuts, [*cuts[1:], T], strict=True):
            if a % recurrence == 0:
                state = self._unflatten(chunk_states[a].detach())
            else:
                assert state is not None, "cuts must start at step 0"
                keep = (1.0 - dones[a - 1]).view(1, -1, 1)
                state = (state[0] * keep, state[1] * keep) if self.is_lstm else state * keep
            out, state = self.rnn(x[a:b], state)
            outs.append(out)
        return outs[0] if len(outs) == 1 else torch.cat(outs, dim=0)

    def sequence_packed(self, x: Tensor, chunk_states: Tensor, dones: np.ndarray, recurrence: int) -> Tensor:
        """`sequence` as one RNN call on a `PackedSequence` of every segment (Sample Factory's layout,
        `surge.models.rnn_packing`).

        x `[T, B, in]`, chunk_states `[T, B, state_size]`, dones `[T, B]` numpy array on the CPU
        (nonzero at an episode end); returns `[T, B, hidden]`."""
        T, B = x.shape[0], x.shape[1]
        plan = plan_packing(dones, recurrence)
        dev = x.device
        packed = PackedSequence(x.reshape(T * B, -1).index_select(0, plan.gather.to(dev)), plan.batch_sizes)
        first = chunk_states.detach().reshape(T * B, -1).index_select(0, plan.first_rows.to(dev))
        h0 = first * plan.from_stored.to(dev, first.dtype).unsqueeze(1)
        out, _ = self.rnn(packed, self._unflatten(h0))
        return out.data.index_select(0, plan.scatter.to(dev)).view(T, B, -1)


#: a core: `step`, `sequence`, `out_size` and `state_size` (ints)
Core = RnnCore | IdentityCore


def make_core(use_rnn: bool, in_size: int, hidden: int, rnn_type: str, num_layers: int) -> Core:
    """`RnnCore` when `use_rnn`, else `IdentityCore`."""
    if use_rnn:
        return RnnCore(in_size, hidden, rnn_type, num_layers)
    return IdentityCore(in_size)
