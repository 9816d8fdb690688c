"""surge: fast reinforcement learning from a lot of experience (APPO with V-trace)."""

__version__ = "0.1.0"
