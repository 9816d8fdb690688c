"""rl_games' YAML files as they ship, translated to surge's flags (`translation.translate`). In the
app layer: the translation reads the env families' names (Atari, Brax) and builds a model to count
parameters."""
