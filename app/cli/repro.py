"""``hourtab repro`` (the BERT watch-overhead reproducer) and ``hourtab profile inspect``."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import click


@click.command("repro")
@click.option("--preset", type=click.Choice(["bert-base", "tiny"]), default="bert-base", show_default=True,
              help="Model size: bert-base (201 parameter tensors, as in the incident) or tiny (for tests).")
@click.option("--steps", default=20, show_default=True, type=int, help="Measured steps per mode.")
@click.option("--warmup", default=3, show_default=True, type=int, help="Unmeasured warm-up steps per mode.")
@click.option("--modes", "modes_text", multiple=True,
              help="Comma-separated modes: baseline, watch:<gradients|parameters|all>:<freq>, "
                   "fastwatch:<gradients|parameters|all>:<freq>.  "
                   "[default: baseline,watch:all:1,watch:gradients:100]")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("repro-out"),
              show_default=True, help="Folder for profile.json, profile.md, W&B runs and profiler files.")
@click.option("--device", default="auto", show_default=True, help="auto, cpu or cuda.")
@click.option("--layers", type=int, help="Override the preset's encoder layers.")
@click.option("--hidden", type=int, help="Override the hidden size (the feed-forward size follows: 4 × hidden).")
@click.option("--heads", type=int, help="Override the attention heads.")
@click.option("--seq-len", type=int, help="Override the sequence length (default 128).")
@click.option("--batch-size", type=int, help="Override the batch size (default 2).")
@click.option("--num-labels", type=int, help="Override the classifier's labels (default 14).")
@click.option("--project-steps", default=11_250, show_default=True, type=int,
              help="Steps of the full run whose time is projected from the mean step.")
@click.option("--profile-steps", default=2, show_default=True, type=int,
              help="Steps captured with torch.profiler per mode (the heaviest mode's capture is kept; 0: none).")
@click.option("--threads", type=int, help="torch CPU threads (default: torch's choice less the cores other processes "
                                           "keep busy; with --calibrate, 1).")
@click.option("--rounds", default=1, show_default=True, type=int,
              help="Interleaved rounds of every mode (baseline, watch, fix, baseline, …); figures are per-mode "
                   "medians and spreads over rounds.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed for weights and batches.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
@click.option("--calibrate", "calibrate_to", is_flag=False, flag_value="", default=None, metavar="[PATH]",
              help="Instead: measure wandb.watch's histogram cost per element and per tensor here (CPU, and GPU "
                   "when present) for `hourtab audit`; kept in the data dir, or written to PATH. Samples that fall "
                   "as tensors grow or scatter too widely are measured again, then refused (exit 2, nothing saved).")
def repro(preset: str, steps: int, warmup: int, modes_text: tuple[str, ...], out: Path, device: str,
          layers: int | None, hidden: int | None, heads: int | None, seq_len: int | None,
          batch_size: int | None, num_labels: int | None, project_steps: int, profile_steps: int,
          threads: int | None, rounds: int, seed: int, no_progress: bool, calibrate_to: str | None) -> None:
    """Measure what wandb.watch costs a BERT training step on this machine, against a baseline."""
    if calibrate_to is not None:
        from incidents.tools.repro.calibrate import calibrate_and_store, summary_lines

        path, calibration = calibrate_and_store(calibrate_to or None, device=device, threads=threads)
        threads_used = calibration["machine"]["torch_threads"]
        click.echo("\n".join([f"Calibration of wandb.watch histograms (torch threads: {threads_used}):",
                              *summary_lines(calibration), f"Wrote {path}."]))
        return
    from incidents.tools.repro.model import PRESETS
    from incidents.tools.repro.modes import DEFAULT_MODES, parse_modes
    from incidents.tools.repro.reproduce import ReproSettings, run_repro

    spec = PRESETS[preset].with_overrides(layers=layers, hidden=hidden, heads=heads, seq_len=seq_len,
                                          batch_size=batch_size, num_labels=num_labels)
    if hidden is not None:
        spec = spec.with_overrides(intermediate=4 * hidden)
    settings = ReproSettings(
        spec=spec, modes=parse_modes(modes_text or DEFAULT_MODES), out=out, preset=preset, steps=steps,
        warmup=warmup, device=device, project_steps=project_steps, profile_steps=profile_steps, seed=seed,
        threads=threads, progress=not no_progress, rounds=rounds,
        command=_command_line(click.get_current_context()),
    )
    profile = run_repro(settings)
    model = profile["model"] or {}
    if model:
        click.echo(f"Model: {model['name']} ({preset}), {model['parameter_tensors']} parameter tensors "
                   f"(expected {model['expected_parameter_tensors']}), {model['parameters']:,} parameters.")
    for mode in profile["modes"]:
        ratio = f"{mode['ratio_to_baseline']:.2f}× baseline" if mode["ratio_to_baseline"] else "no baseline"
        mean = f"{mode['mean_step_s'] * 1000:.1f} ms/step" if mode["mean_step_s"] else "not measured"
        hook = f", watch hooks {mode['hook_share'] * 100:.1f} % of the step" if mode["hook_share"] else ""
        cpu = f" (CPU time {mode['cpu_ratio_to_baseline']:.2f}×)" if mode.get("cpu_ratio_to_baseline") else ""
        click.echo(f"  {mode['mode']:<24} {mean}, {ratio}{cpu}{hook}")
    for note in profile["notes"]:
        click.echo(f"Note: {note}")
    click.echo(f"Wrote {out / 'profile.json'} and {out / 'profile.md'} (measured on "
               f"{profile['machine']['hostname'] or 'this machine'}).")
    if profile["interrupted"]:
        click.echo("Interrupted: kept the steps measured before Ctrl-C.", err=True)
        sys.exit(130)


def _command_line(ctx: click.Context) -> str:
    """The command with every option spelled out, so profile.json says exactly how to rerun it."""
    parts = ["hourtab", "repro"]
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        flag = param.opts[0]
        if value is None or value == () or value is False:
            continue
        if value is True:
            parts.append(flag)
        elif isinstance(value, tuple):
            parts.extend(p for v in value for p in (flag, str(v)))
        else:
            parts.extend([flag, str(value)])
    return shlex.join(parts)


@click.group("profile")
def profile_group() -> None:
    """Read profiler output: where a training step's time went."""


@profile_group.command("inspect")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the attribution as JSON.")
def profile_inspect(path: Path, as_json: bool) -> None:
    """Attribute time in a profile.json, a key_averages table dump or a chrome trace (.json/.json.gz)."""
    from incidents.evidence.profiler import inspect_profile

    result = inspect_profile(path)
    data = result.to_dict()
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    share = "n/a" if data["watch_share"] is None else f"{data['watch_share'] * 100:.1f} %"
    click.echo(f"{path.name}: {data['kind']}, {data['steps'] if data['steps'] is not None else 'unknown'} steps"
               + (f" (labelled {data['step_label']})" if data.get("step_label") else "")
               + (f", mode {data['mode']}" if data["mode"] else ""))
    watch = data.get("watch")
    if watch:
        freq = f"log_freq {watch['log_freq']}" if watch["log_freq"] else "log_freq unknown"
        per = f", {watch['histograms_per_logging_step']} histograms per logging step" \
            if watch["histograms_per_logging_step"] else ""
        click.echo(f"  watch: {watch['ranges']} {watch['label']} ranges; {freq}{per}")
    click.echo(f"  total {data['total_ms']:.1f} ms; watch work {data['watch_ms']:.1f} ms ({share})")
    for phase in ("forward", "backward", "optimizer"):
        value = data[f"{phase}_ms"]
        click.echo(f"  {phase:<9} {'unknown' if value is None else f'{value:.1f} ms'}")
    if data["top_ops"]:
        click.echo("  top ops by self time:")
        for op in data["top_ops"]:
            click.echo(f"    {op['self_ms']:10.1f} ms  {op['calls']:>6} calls  {op['name']}"
                       + ("  [watch]" if op["watch"] else ""))
    for warning in data["warnings"]:
        click.echo(f"  note: {warning}")


commands: list[click.Command] = [repro, profile_group]
