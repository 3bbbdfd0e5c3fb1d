"""profile.json and profile.md: the reproducer's results, named after the machine that produced them.

profile.json follows ``incidents/evidence/schemas/profile.schema.json`` (``schema_version`` 1); every field is
described there. profile.md is the same content as a table a consultant can paste into a report.
Nothing here is a reference figure: every number comes from the run being written.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from incidents.tools.repro import measure
from incidents.tools.repro.repro_settings import PROFILE_DIR, ModeResult, ReproSettings, Round

SCHEMA_NAME = "hourtab.repro.profile"
SCHEMA_VERSION = 1
PHASES = ("forward", "backward", "optimizer")


def build_profile(settings: ReproSettings, device: str, model_info: dict[str, Any] | None,
                  results: list[ModeResult], heaviest: ModeResult | None, interrupted: bool,
                  wall_s: float) -> dict[str, Any]:
    """Assemble the profile.json document from the measured modes."""
    entries = [_mode_entry(r, settings) for r in results]
    baseline = next((e for e in entries if e["mode"] == "baseline" and e["mean_step_s"]), None)
    for entry in entries:
        if baseline and entry["mean_step_s"] is not None:
            entry["ratio_to_baseline"] = entry["mean_step_s"] / baseline["mean_step_s"]
        if baseline and entry["cpu_s"] and baseline["cpu_s"]:
            entry["cpu_ratio_to_baseline"] = entry["cpu_s"] / baseline["cpu_s"]
    notes = []
    if any(e["kind"] == "fastwatch" for e in entries):
        notes.append(SPARE_CORE_NOTE)
    if interrupted:
        notes.append("Interrupted with Ctrl-C: modes marked incomplete hold only the steps measured before it.")
    if baseline is None:
        notes.append("No completed baseline mode, so no ratios to baseline.")
    return {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "command": settings.command,
        "machine": machine_info(),
        "hardware": hardware_info(device),
        "versions": versions(),
        "model": model_info,
        "settings": {"modes": [str(m) for m in settings.modes], "steps": settings.steps,
                     "warmup": settings.warmup, "seed": settings.seed, "device": device,
                     "project_steps": settings.project_steps, "profile_steps": settings.profile_steps,
                     "threads": settings.threads, "rounds": settings.rounds},
        "interrupted": interrupted,
        "wall_s": wall_s,
        "modes": entries,
        "profiler": _profiler_entry(heaviest),
        "notes": notes,
    }


SPARE_CORE_NOTE = ("fastwatch computes histograms on a worker thread: it needs a spare CPU core. On a loaded "
                   "machine (load average near the core count) the worker competes with training and its wall-"
                   "clock ratio rises; compare the CPU-time ratio beside the wall ratio.")


def _rounds_summary(rounds: list[Round]) -> dict[str, Any]:
    """Per-mode median and spread over interleaved rounds, with total wall and process CPU time."""
    medians = [m for r in rounds if (m := r["median_step_s"]) is not None]
    return {"rounds": rounds,
            "round_median_step_s": statistics.median(medians) if medians else None,
            "round_spread_s": (max(medians) - min(medians)) if len(medians) > 1 else None,
            "wall_s": sum(r["wall_s"] for r in rounds) if rounds else None,
            "cpu_s": sum(r["cpu_s"] for r in rounds) if rounds else None,
            "cpu_ratio_to_baseline": None}


def _mode_entry(result: ModeResult, settings: ReproSettings) -> dict[str, Any]:
    stats = measure.step_time_stats(result.step_s)
    total = sum(result.step_s)
    hook_total = sum(result.hook_s)
    phases = {p: _mean([s.get(p, 0.0) for s in result.phase_s]) for p in PHASES}
    compute_share = None
    if result.phase_timer == "host-clock" and total:
        in_phases = sum(sum(s.get(p, 0.0) for p in PHASES) for s in result.phase_s)
        compute_share = max(0.0, in_phases - hook_total) / total
    mode = result.mode
    return {
        "mode": str(mode),
        "kind": mode.kind,
        "log": mode.log,
        "log_freq": mode.log_freq,
        "complete": result.complete,
        "steps_measured": len(result.step_s),
        "training_steps": result.training_steps,
        **stats,
        "ratio_to_baseline": None,
        "hook_s": hook_total,
        "hook_share": hook_total / total if total else None,
        "mean_hook_ms": hook_total * 1000.0 / len(result.hook_s) if result.hook_s else None,
        # The hooks' work on the training thread, whatever else the machine runs (wall time counts that too).
        "hook_cpu_s": result.hook_cpu_s,
        "mean_hook_cpu_ms": result.hook_cpu_s * 1000.0 / len(result.hook_s)
        if result.hook_cpu_s is not None and result.hook_s else None,
        "histograms_logged": result.histograms_logged,
        "logged": None if result.histograms_logged is None or not mode.watches else result.histograms_logged > 0,
        "note": _note(result, settings),
        "watch_thread_cpu_s": result.watch_thread_cpu_s,
        "phase_timer": result.phase_timer,
        "phases_ms": {p: (v * 1000.0 if v is not None else None) for p, v in phases.items()},
        "compute_share": compute_share,
        "device_utilization": result.device_utilization,
        "projected_run_s": stats["mean_step_s"] * settings.project_steps if stats["mean_step_s"] else None,
        "top_tensors": result.top_tensors,
        "wandb_run": result.wandb_run,
        "step_times_s": result.step_s,
        "hook_times_s": result.hook_s,
        **_rounds_summary(result.rounds),
    }


def _note(result: ModeResult, settings: ReproSettings) -> str | None:
    mode = result.mode
    if not mode.watches or result.histograms_logged != 0 or not result.complete:
        return None
    if mode.kind == "fastwatch":
        counted = "log_freq counts backward passes"
    else:
        per = "backward pass" if mode.log == "gradients" else "forward call"
        counted = f"log_freq counts hook calls (one per parameter per {per})"
    return (f"Did not log: {counted}; log_freq={mode.log_freq} and this mode ran {result.training_steps} "
            "training steps, so no histogram was written and its cost here is the hooks' bookkeeping only. "
            f"Use --warmup + --steps >= {mode.log_freq} to include a logging step.")


def _profiler_entry(heaviest: ModeResult | None) -> dict[str, Any] | None:
    if heaviest is None or not heaviest.profile_files:
        return None
    return {"mode": str(heaviest.mode), "steps": int(heaviest.profile_files["steps"]),
            "table": f"{PROFILE_DIR}/{heaviest.profile_files['table']}",
            "chrome_trace": f"{PROFILE_DIR}/{heaviest.profile_files['chrome_trace']}"}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def load_average() -> list[float] | None:
    """1, 5 and 15 minute load averages (None where the OS has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def machine_info() -> dict[str, Any]:
    """Which machine, and how busy it was when the profile was written (shared machines are noisy)."""
    return {"hostname": platform.node() or None, "os": platform.platform(), "python": sys.version.split()[0],
            "load_average": load_average()}


def hardware_info(device: str) -> dict[str, Any]:
    """CPU model and cores always; GPU name and memory when the run used CUDA."""
    import torch  # noqa: PLC0415 -- torch only inside the reproducer (the tools fence)

    info: dict[str, Any] = {"device": "cuda" if device.startswith("cuda") else "cpu",
                            "cpu_model": _cpu_model(), "cpu_cores": os.cpu_count(),
                            "torch_threads": torch.get_num_threads(),
                            "gpu_name": None, "gpu_memory_bytes": None, "gpu_count": 0}
    if info["device"] == "cuda":
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        info.update(gpu_name=props.name, gpu_memory_bytes=int(props.total_memory),
                    gpu_count=torch.cuda.device_count())
    return info


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for package in ("torch", "transformers", "wandb", "hourtab"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = None
    return found


def write_outputs(profile: dict[str, Any], out: Path) -> None:
    """Write profile.json (atomically: a half-written profile would mislead) and profile.md."""
    tmp = out / "profile.json.tmp"
    tmp.write_text(json.dumps(profile, indent=2) + "\n", encoding="utf-8")
    tmp.replace(out / "profile.json")
    (out / "profile.md").write_text(render_markdown(profile), encoding="utf-8")


def render_markdown(profile: dict[str, Any]) -> str:
    """profile.md: the machine, the model, one row per mode, and where the files are."""
    host = profile["machine"]["hostname"] or "this machine"
    lines = [f"# Watch-overhead profile measured on {host}", "",
             *_setup_lines(profile), "", *_mode_table(profile), "", *_legend_lines(profile),
             *_notes_lines(profile), *_costly_tensor_lines(profile), "", "## Files", "", *_file_lines(profile)]
    return "\n".join(lines) + "\n"


def _setup_lines(profile: dict[str, Any]) -> list[str]:
    """The bullet list: hardware, load, software, model and steps."""
    hw, model, cfg = profile["hardware"], profile["model"] or {}, profile["settings"]
    lines = [_hardware_line(hw), *_load_lines(profile)]
    v = profile["versions"]
    lines.append(f"- Software: torch {v['torch']}, transformers {v['transformers']}, wandb {v['wandb']}.")
    if model:
        lines.append(f"- Model: {model['name']} ({model.get('preset') or 'custom'}: {model['layers']} layers, "
                     f"hidden {model['hidden']}, {model['heads']} heads), {model['parameter_tensors']} parameter "
                     f"tensors, {model['parameters']:,} parameters; batch {model['batch_size']} × seq "
                     f"{model['seq_len']}.")
    lines.append(f"- Steps: {cfg['warmup']} warm-up (not measured) + {cfg['steps']} measured per mode, "
                 f"seed {cfg['seed']}; created {profile['created_at']}.")
    if profile["interrupted"]:
        lines.append("- **Interrupted** (Ctrl-C): figures cover only the steps measured before it.")
    return lines


def _hardware_line(hw: dict[str, Any]) -> str:
    if hw["device"] == "cuda":
        gib = (hw["gpu_memory_bytes"] or 0) / 2**30
        return f"- Hardware: {hw['gpu_name']} ({gib:.0f} GiB); host CPU {hw['cpu_model']}."
    return (f"- Hardware: CPU {hw['cpu_model']}, {hw['cpu_cores']} logical cores, "
            f"{hw['torch_threads']} torch threads. No GPU was used.")


def _load_lines(profile: dict[str, Any]) -> list[str]:
    """The machine's load around the measurement: other work on it slows every mode."""
    machine, lines = profile["machine"], []
    before, after = machine.get("load_average_before"), machine.get("load_average_after")
    if before and after:
        lines.append(f"- Load average (1 min) before and after measuring: {before[0]:.2f} → {after[0]:.2f}; "
                     f"{profile['settings'].get('rounds', 1)} interleaved round(s) of every mode.")
    load = machine.get("load_average")
    if load:
        lines.append(f"- Load average when written (1, 5, 15 min): {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} "
                     "— other work on this machine slows every mode.")
    return lines


def _mode_table(profile: dict[str, Any]) -> list[str]:
    """One row per mode: step times, ratios to the baseline, the hooks' share, utilisation, projection."""
    cuda = profile["hardware"]["device"] == "cuda"
    util_header = "GPU util (NVML)" if cuda else "Compute share (CPU)"
    projected = f"Projected {profile['settings']['project_steps']:,} steps"
    lines = [f"| Mode | Mean step | Median | p90 | × baseline (wall) | × baseline (CPU time) | Watch-hook share | "
             f"{util_header} | Histograms logged | {projected} |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for m in profile["modes"]:
        util = (m["device_utilization"] or {}).get("mean_percent") if cuda else m["compute_share"]
        util_text = (_pct(util / 100.0) if cuda and util is not None else _pct(util))
        logged = "—" if m["kind"] == "baseline" else ("n/a" if m["histograms_logged"] is None
                                                       else f"{m['histograms_logged']:,}")
        status = "" if m["complete"] else " (incomplete)"
        lines.append(f"| `{m['mode']}`{status} | {_ms(m['mean_step_s'])} | {_ms(m['median_step_s'])} | "
                     f"{_ms(m['p90_step_s'])} | {_ratio(m['ratio_to_baseline'])} | "
                     f"{_ratio(m.get('cpu_ratio_to_baseline'))} | {_pct(m['hook_share'])} | "
                     f"{util_text} | {logged} | {_duration(m['projected_run_s'])} |")
    return lines


def _legend_lines(profile: dict[str, Any]) -> list[str]:
    lines = []
    if profile["hardware"]["device"] != "cuda":
        lines.append("Compute share = time in forward, backward and optimizer (watch hooks excluded) ÷ step "
                     "time, on the host clock. It is a CPU figure, not GPU utilisation.")
    lines.append("Watch-hook share = time the training thread spent inside the watch's hooks ÷ step time. "
                 "Projected = mean step × projected steps.")
    return lines


def _notes_lines(profile: dict[str, Any]) -> list[str]:
    notes = [f"- `{m['mode']}`: {m['note']}" for m in profile["modes"] if m["note"]] + \
            [f"- {n}" for n in profile["notes"]]
    return ["", "## Notes", *notes] if notes else []


def _costly_tensor_lines(profile: dict[str, Any]) -> list[str]:
    """The tensors whose hooks cost most, in the mode whose hooks cost most."""
    costly = max((m for m in profile["modes"] if m["top_tensors"]), key=lambda m: m["hook_s"], default=None)
    if not costly:
        return []
    return ["", f"## Costliest tensors in `{costly['mode']}` (measured steps)", "",
            "| Tensor | Elements | Calls | Total ms | Mean ms |", "|---|---:|---:|---:|---:|",
            *(f"| `{t['name']}` | {t['numel']:,} | {t['calls']} | {t['total_ms']:.1f} | {t['mean_ms']:.2f} |"
              for t in costly["top_tensors"])]


def _file_lines(profile: dict[str, Any]) -> list[str]:
    lines = [f"- W&B offline run for `{m['mode']}`: `{m['wandb_run']['dir']}`"
             for m in profile["modes"] if m["wandb_run"]]
    if profile["profiler"]:
        p = profile["profiler"]
        lines.append(f"- torch.profiler capture of `{p['mode']}` ({p['steps']} steps): `{p['table']}`, "
                     f"`{p['chrome_trace']}`")
    return lines


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1000:,.1f} ms"


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f} %"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    minutes = round(seconds / 60)
    if minutes < 1:
        return f"{seconds:.0f} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min"
