import pytest

from incidents.tools.repro.measure import WATCH_RANGE, step_time_stats


def test_summary_statistics_by_hand():
    stats = step_time_stats([0.5, 0.1, 0.4, 0.2, 0.3, 1.0, 0.6, 0.8, 0.7, 0.9])
    assert stats["mean_step_s"] == pytest.approx(0.55)
    assert stats["median_step_s"] == pytest.approx(0.55)
    assert stats["p90_step_s"] == pytest.approx(0.91)  # rank 8.1 between 0.9 and 1.0
    assert (stats["min_step_s"], stats["max_step_s"]) == (0.1, 1.0)
    assert step_time_stats([])["mean_step_s"] is None


@pytest.mark.torch
def test_wandb_hook_timer_times_real_wandb_watch(wandb_offline):
    torch = pytest.importorskip("torch")
    import wandb

    from incidents.tools.repro.measure import WandbHookTimer

    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Linear(64, 4))
    run = wandb.init(mode="offline", dir=str(wandb_offline), reinit="finish_previous")
    try:
        run.watch(model, log="all", log_freq=1, idx=0)
        timer = WandbHookTimer(run, model, torch.profiler.record_function)
        original_hook = timer._forward_hook
        timer.measuring = True
        per_step = []
        with torch.profiler.profile() as prof:
            for _ in range(3):
                model(torch.randn(8, 32)).sum().backward()
                run.log({"x": 1})
                per_step.append(timer.take())
        assert timer.calls == 3 * 8  # 4 tensors, gradients and parameters, 3 steps
        assert all(s > 0 for s in per_step)
        top = timer.top_tensors()
        assert {t["name"] for t in top} == {f"{kind}/{i}.{p}" for kind in ("gradients", "parameters")
                                            for i in (0, 1) for p in ("weight", "bias")}
        assert top[0]["total_ms"] >= top[-1]["total_ms"] > 0
        assert {t["numel"] for t in top} == {32 * 64, 64, 64 * 4, 4}
        names = [e.key for e in prof.key_averages()]
        assert WATCH_RANGE in names
        timer.close()
        assert "log_tensor_stats" not in run._torch.__dict__
        assert original_hook in model._forward_hooks.values()
        run.unwatch(model)
    finally:
        run.finish()


@pytest.mark.torch
def test_step_clock_on_cpu_accounts_for_the_step():
    torch = pytest.importorskip("torch")
    from incidents.tools.repro.measure import StepClock

    clock = StepClock(torch, "cpu")
    clock.begin()
    for phase in ("forward", "backward", "optimizer"):
        torch.randn(200, 200) @ torch.randn(200, 200)
        clock.mark(phase)
    wall = clock.end()
    phases = clock.phases()
    assert set(phases) == {"forward", "backward", "optimizer"}
    assert 0 < sum(phases.values()) <= wall
    assert clock.timer == "host-clock"


@pytest.mark.torch
@pytest.mark.gpu
def test_cuda_clock_and_nvml_sampler():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    import time

    from incidents.tools.repro.measure import NvmlSampler, StepClock

    clock = StepClock(torch, "cuda")
    x = torch.randn(4096, 4096, device="cuda")
    sampler = NvmlSampler(torch.cuda.current_device())
    sampler.start()
    started = time.perf_counter()
    while time.perf_counter() - started < 1.0:
        clock.begin()
        for phase in ("forward", "backward", "optimizer"):
            x @ x
            clock.mark(phase)
        wall = clock.end()
    summary = sampler.stop()
    assert clock.timer == "cuda-events"
    assert 0 < sum(clock.phases().values()) <= wall * 1.05
    assert summary["error"] is None
    assert summary["sampling_hz"] >= 10
    assert summary["mean_percent"] > 0
