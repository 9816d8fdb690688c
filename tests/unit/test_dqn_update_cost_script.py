"""benchmarks/dqn_update_cost.py (the DQN update cost per Q-network variant in docs/results.md)
runs, builds the variants it names, and times each."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import dqn_update_cost as cost  # noqa: E402


def test_the_script_times_every_variant(capsys):
    medians = cost.main(["--rounds", "1", "--updates", "1", "--warmup", "1"])
    assert set(medians) == set(cost.VARIANTS) and all(t > 0 for t in medians.values())
    out = capsys.readouterr().out
    # the linear-stream variant is the old head: as many weights as the plain one plus V's 513
    counts = {line.split(":")[0]: int(line.split()[1]) for line in out.splitlines() if "parameters" in line}
    assert counts["dueling_linear"] == counts["plain"] + 513
    assert counts["dueling_paper"] == counts["plain"] + 513 + 3136 * 512 + 512
