"""Models: encoders, cores, action distributions, normalisers and the actor-critic."""

from surge.models.actor_critic import ActorCritic, ActOutput, make_actor_critic, register_model
from surge.models.encoders import Encoder, register_encoder

__all__ = ["ActOutput", "ActorCritic", "Encoder", "make_actor_critic", "register_encoder", "register_model"]
