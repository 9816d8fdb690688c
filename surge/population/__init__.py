"""Populations of policies: each policy's own hyper-parameters, the commands the run sends to a
policy's learner, and the controllers that act through them in the main process (PBT)."""
