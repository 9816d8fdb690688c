"""The cost model of benchmarks/cost_model.py: its terms against hand-computed cases, and its
validation on the H200 runs of 2026-11-28 and 2026-12-04 from the committed inputs (benchmarks/cost_model_data.json)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from configs import CONFIGS  # noqa: E402
from cost_model import (  # noqa: E402
    Machine,
    Role,
    fit_host,
    gpu_learner,
    load_data,
    predict,
    today,
    today_roles,
    validation,
)

from surge.app.resolve import parse_cfg  # noqa: E402
from surge.cfg.config import env_frameskip  # noqa: E402


def test_a_single_process_ceiling_binds_before_the_cores():
    # 100 µs of rollout side + a 20-µs learner on 16 cores: the cores would carry
    # 16e6 / 120 = 133333 frames/s, the learner's one core only 1e6 / 20 = 50000
    roles = [Role("rollout", 100.0), Role("learner", 20.0, processes=1)]
    p = predict(roles, Machine(cores=16))
    assert p.binding == "learner"
    assert p.fps == pytest.approx(50_000)
    assert p.terms["cores"] == pytest.approx(16e6 / 120)


def test_the_cores_bind_when_they_are_few():
    # the same run on 2 cores at 90% use: 2 * 0.9 * 1e6 / 120 = 15000 < 50000
    roles = [Role("rollout", 100.0), Role("learner", 20.0, processes=1)]
    p = predict(roles, Machine(cores=2, util=0.9))
    assert p.binding == "cores"
    assert p.fps == pytest.approx(15_000)


def test_speed_ratio_and_kernel_launches_make_a_roles_cost_there():
    # learner: 10 µs here x 1.5 + 2 launches x 5 µs = 25 µs -> 40000 frames/s; a figure logged
    # there (carry="none") keeps its 30 µs; two inference processes share theirs: 2e6 / 40
    roles = [
        Role("game", 30.0, carry="none"),
        Role("learner", 10.0, processes=1, launches_per_frame=2.0),
        Role("inference", 20.0, processes=2, launches_per_frame=1.0),
    ]
    p = predict(roles, Machine(cores=64, speed_ratio=1.5, launch_us=5.0))
    assert p.cost_us == pytest.approx({"game": 30.0, "learner": 25.0, "inference": 35.0})
    assert p.terms["inference"] == pytest.approx(2e6 / 35)
    assert p.binding == "learner" and p.fps == pytest.approx(40_000)
    # without a GPU the launches cost nothing: the learner is 15 µs, the inference pair 2e6 / 30
    cpu = predict(roles, Machine(cores=64, speed_ratio=1.5))
    assert cpu.fps == pytest.approx(1e6 / 15)


def test_a_bad_machine_or_a_free_run_is_refused():
    with pytest.raises(ValueError, match="util"):
        predict([Role("rollout", 10.0)], Machine(cores=4, util=1.5))
    with pytest.raises(ValueError, match="cost nothing"):
        predict([Role("rollout", 0.0)], Machine(cores=4))


def test_the_host_fit_solves_two_roles_by_hand():
    # here 10 and 20 µs, 2 and 1 launches per frame, there 9 and 11 µs:
    # 10 r + 2 L = 9 and 20 r + L = 11 give r = 13/30, L = 7/3 (by substitution)
    ratio, launch = fit_host((10.0, 2.0, 9.0), (20.0, 1.0, 11.0))
    assert ratio == pytest.approx(13 / 30) and launch == pytest.approx(7 / 3)
    with pytest.raises(ValueError, match="proportional"):
        fit_host((10.0, 1.0, 9.0), (20.0, 2.0, 11.0))


def test_the_committed_calibration_is_the_fit_of_its_inputs():
    data = load_data()
    c = data["calibration"]
    ratio, launch = fit_host(tuple(c["learner"]), tuple(c["inference"]))
    assert data["today"]["machine"]["host_ratio"] == pytest.approx(ratio, abs=0.001)
    assert data["today"]["machine"]["launch_us"] == pytest.approx(launch, abs=0.01)


# the H200 runs' medians as logged (docs/logs/gpu_2026-11-28.md, gpu_2026-12-04.md): key -> env frames/s
LOGGED = {
    ("2026-11-28", "surge"): 52275,
    ("2026-11-28", "sf"): 64483,
    ("2026-12-04", "surge"): 74085,
    ("2026-12-04", "surge_2_inference"): 73410,
    ("2026-12-04", "sf"): 60894,
    ("2026-12-04", "surge_pong"): 48105,
    ("2026-12-04", "sf_pong"): 40784,
}


@pytest.mark.parametrize("key", sorted(validation(load_data())))
def test_the_logged_h200_runs_are_predicted_within_20_percent(key):
    # from the inputs and sources in cost_model_data.json; a route marked within_20 false is kept to
    # show its miss (the 11-28 route carrying the single processes by the CPU-bound ratio, the
    # prediction made before the 12-04 run, Pong's inference worker taken at its cost alone): it must
    # stay outside, or the data file's account is stale
    r = validation(load_data())[key]
    date, fw, _ = key.split(" ")
    assert r["measured"] == LOGGED[(date, fw)]
    ratio = r["prediction"].fps / r["measured"]
    assert (0.8 <= ratio <= 1.2) == r["within_20"], (key, ratio)


def test_a_config_measured_on_the_gpu_takes_its_single_processes_from_there():
    # role_ceilings.py --device cuda figures replace the host side carried from here plus launches
    data = load_data()
    # the code measured there (no DMA adjustment: `learner_dma` None, as the 12-04 routes have it)
    cfg = {**data["today"]["configs"]["doom_benchmark"], "inference_workers": 2, "learner_dma": None}
    roles = {r.name: r for r in today_roles(cfg, 16)}
    g = cfg["gpu_measured"]
    assert (roles["learner"].cpu_us, roles["learner"].carry, roles["learner"].launches_per_frame) == (
        g["learner_us"],
        "none",
        0.0,
    )
    assert (roles["inference"].cpu_us, roles["inference"].processes) == (g["inference_us"], 2)
    p = predict(list(roles.values()), Machine(cores=16, speed_ratio=2.0, host_ratio=5.0, launch_us=100.0))
    assert p.terms["learner"] == pytest.approx(1e6 / g["learner_us"])  # no ratio, no launches


def test_the_dma_path_keeps_part_of_the_measured_host_side_and_adds_its_copy_calls():
    # measured there: 5 µs a frame, 2 of them the host gather; by DMA a quarter of the host work is
    # left (1.5 µs less) and 0.01 copy calls a frame more at 50 µs each (0.5 µs more): 4 µs
    role = gpu_learner(
        {"learner_us": 5.0, "learner_host_us": 2.0},
        {"host_left": 0.25, "extra_copies_per_frame": 0.01},
    )
    assert (role.cpu_us, role.launches_per_frame, role.carry, role.processes) == (3.5, 0.01, "none", 1)
    m = Machine(cores=8, speed_ratio=3.0, host_ratio=7.0, launch_us=50.0)
    assert predict([role], m).cost_us["learner"] == pytest.approx(4.0)
    assert gpu_learner({"learner_us": 5.0, "learner_host_us": 2.0}, None).cpu_us == 5.0
    with pytest.raises(ValueError, match="host_left"):
        gpu_learner(
            {"learner_us": 5.0, "learner_host_us": 2.0}, {"host_left": 1.5, "extra_copies_per_frame": 0}
        )


def test_todays_learner_is_the_dma_path_and_the_1204_runs_are_predicted_without_it():
    data = load_data()
    for name in ("doom_benchmark", "pong_1epoch"):
        cfg = {**data["today"]["configs"][name], "inference_workers": 1}
        g, dma = cfg["gpu_measured"], cfg["learner_dma"]
        learner = {r.name: r for r in today_roles(cfg, 16)}["learner"]
        assert learner.cpu_us == pytest.approx(
            g["learner_us"] - g["learner_host_us"] * (1 - dma["host_left"])
        )
        assert learner.launches_per_frame == dma["extra_copies_per_frame"] > 0
    for key, r in validation(data).items():
        if key.startswith("2026-12-04 surge"):  # c4e0037 gathered on the host: the learner as measured
            p = r["prediction"]
            assert p.cost_us["learner"] in {
                c["gpu_measured"]["learner_us"]
                for c in data["today"]["configs"].values()
                if "gpu_measured" in c
            } or key.endswith("as_predicted_2026_12_03"), key


def test_todays_predictions_name_a_binding_term_per_config_and_core_count():
    res = today(load_data(), [16, 36, 64])
    assert set(res) == {"doom_benchmark", "pong_1epoch", "cartpole", "halfcheetah"}
    for by_cores in res.values():
        # more cores never lower the rate: the rollout side's cost per frame does not grow with them
        fps = [by_cores[c].fps for c in (16, 36, 64)]
        assert fps == sorted(fps)


def test_an_inference_pass_spreads_its_launches_over_rows_times_frameskip_env_frames():
    # 16 cores x 16 envs / 2 splits / 1 worker = 128 rows per pass; with frameskip 4 a pass serves
    # 512 env frames, so 27 launches are 27 / 512 per env frame (not 27 / 128)
    cfg = {
        "pool": [{"name": "rollout", "cpu_us": 10.0}],
        "main_us": 0.4,
        "learner_host_us": 1.0,
        "learner_launches_per_frame": 0.1,
        "inference_host_us": 2.0,
        "inference_launches_per_call": 27,
        "inference_workers": 1,
        "envs_per_worker": 16,
        "splits": 2,
        "frameskip": 4,
    }
    inference = {r.name: r for r in today_roles(cfg, 16)}["inference"]
    assert inference.launches_per_frame == pytest.approx(27 / 512)


def test_each_predicted_config_has_its_benchmark_configs_frameskip():
    # the learner's and inference worker's inputs are per env frame (env steps x frameskip, what the
    # logged H200 figures count); a config whose frameskip differs from the data file's would get
    # its per-step figures read as per-frame ones (4x off on the frameskip-4 configs)
    for name, cfg in load_data()["today"]["configs"].items():
        assert cfg["frameskip"] == env_frameskip(parse_cfg(list(CONFIGS[name].surge_args))), name


def test_sample_factory_is_predicted_from_its_own_inputs_with_its_configs_machine():
    # Sample Factory's roles are carried the same way as surge's; each config's own speed ratio
    # (its rollout side measured in another session) replaces the shared machine's
    data = load_data()
    res = today(data, [16, 64], "sample_factory")
    assert set(res) == {"doom_benchmark", "pong_1epoch"}
    cfg = data["today"]["sample_factory"]["configs"]["pong_1epoch"]
    m = data["today"]["machine"]
    rollout = cfg["pool"][0]["cpu_us"] * cfg["machine"]["speed_ratio"]
    learner = cfg["learner_host_us"] * m["host_ratio"] + cfg["learner_launches_per_frame"] * m["launch_us"]
    p = res["pong_1epoch"][64]
    assert p.cost_us["rollout"] == pytest.approx(rollout)
    assert p.terms["learner"] == pytest.approx(1e6 / learner)
    # without the override the shared machine's ratio would carry it
    plain = today(
        {**data, "today": {**data["today"], "sample_factory": {"configs": {"x": {**cfg, "machine": {}}}}}},
        [64],
        "sample_factory",
    )
    assert plain["x"][64].cost_us["rollout"] == pytest.approx(cfg["pool"][0]["cpu_us"] * m["speed_ratio"])


def test_a_prediction_takes_as_many_inference_workers_as_lift_the_rate():
    # inference: 10 µs per frame of host side and 64 launches per pass at 5 µs; 16 cores x 8 envs /
    # 2 splits = 64 rows of one frame per pass with one worker: 10 + 5 = 15 µs -> 66.7k frames/s,
    # under the learner's 1e6 / 12.5 = 80k; two workers take 32 rows each: 10 + 10 = 20 µs, shared
    # by 2 -> 100k, and the learner binds; a third adds nothing (the fewest on a tie)
    cfg = {
        "pool": [{"name": "rollout", "cpu_us": 10.0}],
        "main_us": 0.0,
        "learner_host_us": 12.5,
        "learner_launches_per_frame": 0.0,
        "inference_host_us": 10.0,
        "inference_launches_per_call": 64,
        "inference_workers": 1,
        "envs_per_worker": 8,
        "splits": 2,
        "frameskip": 1,
    }
    data = {
        "today": {"machine": {"speed_ratio": 1.0, "host_ratio": 1.0, "launch_us": 5.0}, "configs": {"x": cfg}}
    }
    p = today(data, [16])["x"][16]
    assert p.inference_workers == 2 and p.binding == "learner" and p.fps == pytest.approx(80_000)
    single = today(data, [16], max_inference_workers=1)["x"][16]
    assert single.inference_workers == 1 and single.binding == "inference"
    assert single.fps == pytest.approx(1e6 / 15)
