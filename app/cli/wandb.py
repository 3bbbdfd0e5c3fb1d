"""``hourtab wandb inspect PATH [--json]``: read a W&B run or export and say what it holds."""

from __future__ import annotations

import json

import click


@click.group("wandb")
def wandb_group() -> None:
    """Weights & Biases runs and exports."""


@wandb_group.command("inspect")
@click.argument("path", type=click.Path(exists=True, dir_okay=True, file_okay=True))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (a stable interface).")
def inspect(path: str, as_json: bool) -> None:
    """Summarise a run folder, .wandb file, run archive or export (CSV/JSON/JSONL/Parquet)."""
    from incidents.evidence.wandb import load_run
    from incidents.evidence.wandb.summaries import inspect_dict

    evidence = load_run(path)
    data = inspect_dict(evidence)
    if as_json:
        click.echo(json.dumps(data, indent=2, default=str))
        return
    click.echo(_text(data))


def _text(d: dict) -> str:
    lines = [f"{d['kind']}: {d['name']} ({d['run_id'] or 'no id'})" + (f" · project {d['project']}" if d["project"] else ""),
             f"steps: {d['steps']:,}   runtime: " + (f"{d['runtime_s']:.1f} s" if d["runtime_s"] is not None else "unknown"),
             f"metrics ({len(d['metrics'])}): " + ", ".join(d["metrics"][:12]) + (" …" if len(d["metrics"]) > 12 else ""),
             f"system metrics: {len(d['system_metrics'])}"]
    for gpu, u in d["gpu_utilization"].items():
        lines.append(f"GPU {gpu} utilisation: mean {u['mean']:.1f} %, median {u['median']:.1f} %, p10 {u['p10']:.1f} %")
    h = d["histograms"]
    lines.append(f"histograms: {h['gradients']} gradients, {h['parameters']} parameters at {len(h['steps'])} steps")
    for key, value in d["environment"].items():
        lines.append(f"  {key}: {value}")
    lines.extend(f"warning: {w}" for w in d["warnings"])
    return "\n".join(lines)


commands: list[click.Command] = [wandb_group]
