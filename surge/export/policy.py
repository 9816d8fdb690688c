"""`ExportablePolicy`: an actor-critic's deterministic `act` as a module of positional tensors.

The exported file's inputs, in order (B is the dynamic batch axis; dtypes are the env
observation space's):

- `obs` `[B, *obs_shape]`: a Box observation; for a Dict observation one input per entry,
  `obs_<key>`, in the space's key order, except that a masked Dict's single other entry
  (PettingZoo's `observation`) is `obs` and the mask is `action_mask`, after the others;
- `prev_action` `[B, A]` float32 and `prev_reward` `[B, 1]` float32, only for a policy trained
  with `--use_prev_action_reward` (`surge.envs.prev_action_reward`): the previous step's action
  (one-hot for Discrete, the vector for Box) and reward, zeros at an episode's start; the env's
  own observation is then `obs` (a Box) or its entries as above;
- `action_mask` `[B, num_logits]` (the space's dtype, int8 for surge's wrappers; 1 = legal), only
  for envs with masks (`surge.envs.action_masks`): illegal actions get the logit `MASKED_LOGIT`
  and are never chosen;
- `rnn_states_in` `[B, rnn_state_size]` float32, only for recurrent policies (zeros at an
  episode's start).

Outputs:

- `actions`: the distribution's mode (argmax of each categorical head, the Gaussian's mean),
  `[B]` int64 for Discrete, `[B, heads]` int64 for MultiDiscrete / Tuple of Discrete, `[B, dim]`
  float32 for Box (not mapped onto the action bounds: the env gets `surge.sampling.env_actions.BoxActionMap`
  of it, per `clip_actions` / `rescale_actions`, which the metadata records), `[B, heads +
  dims]` float32 for a Tuple mixing Discrete and Box;
- `logits` `[B, num_logits]` float32: the distribution's parameters (categorical logits, masked;
  for Box the mean then the log standard deviation);
- `values` `[B]` float32: the critic's value;
- `rnn_states_out` `[B, rnn_state_size]` float32: the state after this step (recurrent only).

Observation normalisation (`normalize_input`'s running mean and std, `obs_subtract_mean`,
`obs_scale`) is part of the model's `act`, so it is part of the exported graph: the file takes raw
observations, as the env returns them.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor, nn

from surge.envs.action_masks import MASK_KEY, has_action_mask, unwrapped_key
from surge.envs.prev_action_reward import OBS_KEY, PREV_KEYS
from surge.errors import EnvError

OBS = "obs"
RNN_IN, RNN_OUT = "rnn_states_in", "rnn_states_out"
OUTPUTS = ("actions", "logits", "values")


def _obs_entries(obs_space: gym.Space) -> list[tuple[str | None, str, gym.spaces.Box]]:
    """`(dict key or None, input name, Box space)` per observation input, in order.

    Raises:
        EnvError: an observation space other than a Box or a Dict of Boxes.
    """
    if isinstance(obs_space, gym.spaces.Box):
        return [(None, OBS, obs_space)]
    if not isinstance(obs_space, gym.spaces.Dict):
        raise EnvError(f"cannot export a policy of observation space {obs_space}: a Box or a Dict of Boxes")
    # the env's own entries: a masked Dict's single other one, or a Box that
    # --use_prev_action_reward put under `obs`, is the input `obs`
    own = [k for k in obs_space.spaces if k not in PREV_KEYS]
    prev = [k for k in PREV_KEYS if k in obs_space.spaces]
    single = unwrapped_key(gym.spaces.Dict({k: obs_space.spaces[k] for k in own}))
    if prev and own == [OBS_KEY]:
        single = OBS_KEY
    entries: list[tuple[str | None, str, gym.spaces.Box]] = []
    keys = [k for k in own if k != MASK_KEY] + prev + [k for k in own if k == MASK_KEY]
    for key in keys:  # the previous action and reward after the observation, the mask last
        space = obs_space.spaces[key]
        if not isinstance(space, gym.spaces.Box):
            raise EnvError(f"cannot export observation entry {key!r} of space {space}: Boxes only")
        name = key if key in (MASK_KEY, *PREV_KEYS) else OBS if key == single else f"{OBS}_{key}"
        entries.append((key, name, space))
    return entries


def io_names(obs_space: gym.Space, rnn_state_size: int) -> tuple[list[str], list[str]]:
    """The exported file's (input names, output names) for `obs_space` and a recurrent state of
    `rnn_state_size` floats (0: feed-forward). See the module docstring."""
    inputs = [name for _, name, _ in _obs_entries(obs_space)]
    outputs = list(OUTPUTS)
    if rnn_state_size:
        inputs.append(RNN_IN)
        outputs.append(RNN_OUT)
    return inputs, outputs


class ExportablePolicy(nn.Module):
    """`model.act(obs, rnn_states, deterministic=True)` with positional tensor inputs and a tuple
    of tensor outputs, named by `io_names` (the module docstring gives shapes and dtypes).

    Args:
        model: an acting module with `ActorCritic`'s `act` and `rnn_state_size`, in eval mode.
        obs_space: one agent's observation space (the env's, `action_mask` entry included).
    Raises:
        EnvError: an observation space that cannot be exported (`_obs_entries`).
    """

    def __init__(self, model: nn.Module, obs_space: gym.Space):
        super().__init__()
        self.model = model
        self.entries = _obs_entries(obs_space)
        self.rnn_state_size = int(getattr(model, "rnn_state_size", 0))
        self.input_names, self.output_names = io_names(obs_space, self.rnn_state_size)
        self.masked = has_action_mask(obs_space)

    def forward(self, *inputs: Tensor) -> tuple[Tensor, ...]:
        obs_inputs = inputs[: len(self.entries)]
        obs: Any
        if self.entries[0][0] is None:
            obs = obs_inputs[0]
        else:
            obs = {key: x for (key, _, _), x in zip(self.entries, obs_inputs, strict=True)}
        if self.rnn_state_size:
            rnn = inputs[len(self.entries)]
        else:
            rnn = obs_inputs[0].new_zeros((obs_inputs[0].shape[0], 0), dtype=torch.float32)
        out = self.model.act(obs, rnn, deterministic=True)  # type: ignore[operator]
        result = (out.actions, out.logits, out.values)
        return (*result, out.rnn_states) if self.rnn_state_size else result

    def example_inputs(self, batch: int, seed: int = 0) -> list[Tensor]:
        """Random inputs for `batch` agents: observations sampled from their spaces (seeded),
        recurrent states from N(0, 0.5²) float32."""
        out = []
        for i, (_, _, space) in enumerate(self.entries):
            space.seed(seed + i)
            out.append(torch.as_tensor(np.stack([space.sample() for _ in range(batch)])))
        if self.rnn_state_size:
            g = torch.Generator().manual_seed(seed)
            out.append(0.5 * torch.randn(batch, self.rnn_state_size, generator=g))
        return out
