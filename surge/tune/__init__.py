"""`surge tune`: the fastest worker / env / split (and, on request, batch) settings for an env on
this machine, measured: the dummy sampler ranks sampler layouts cheaply, short training runs of the
best few (and of the defaults) decide, the fastest is written as a YAML for `surge train --cfg`.

Modules: `space` (the settings searched and the machine's CPUs), `measure` (one measurement in its
own process), `child` (that process's entry point), `search` (the two phases), `command` (the
command line, the table, the YAML file). docs/tune.md is the user's page.
"""
