"""Predicted cost of a ``wandb.watch`` call, from a calibration of this machine or the shipped one.

A calibration (``hourtab repro --calibrate``, see ``incidents.tools.repro.calibrate``) gives, per device and
per path (gradients; parameters, which wandb first copies to the host), the seconds per element and
per tensor of one histogram. A watch call logging ``log`` every ``log_freq`` steps then costs, per
training step, ``Σ over logged kinds (elements × per_element + tensors × per_tensor) / log_freq``.

A calibration is checked again when it is loaded (``incidents.tools.audit.checks``): one whose
samples fall as tensors grow, or scatter too widely, is refused rather than predicted with — a
calibration taken under load once became the default and predicted 15× the real cost.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from incidents.errors import InvalidEvidence
from incidents.tools.audit import checks

CALIBRATION_FILE = "watch-calibration.json"
SHIPPED = "default_calibration.json"
KINDS = {"gradients": ("gradients",), "parameters": ("parameters",), "all": ("gradients", "parameters")}


@dataclass(frozen=True)
class Calibration:
    """A loaded calibration and a sentence saying where it came from."""

    document: dict[str, Any]
    origin: str

    def devices(self) -> list[str]:
        return sorted(self.document.get("devices") or {})

    def has(self, device: str) -> bool:
        return device in self.devices()

    def path(self, device: str, kind: str) -> dict[str, float]:
        return self.document["devices"][device][kind]


def stored_path(environ: dict[str, str] | None = None) -> Path:
    """``<HOURTAB_DATA_DIR>/watch-calibration.json`` (the data dir defaults to ./instance)."""
    env = os.environ if environ is None else environ
    return Path(env.get("HOURTAB_DATA_DIR") or "instance") / CALIBRATION_FILE


def _read(text: str, label: str) -> dict[str, Any]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidEvidence(f"{label} is not a calibration (not JSON: {e.msg}).") from e
    devices = document.get("devices") if isinstance(document, dict) else None
    ok = isinstance(devices, dict) and devices and all(
        isinstance(paths, dict) and all(isinstance(paths.get(k), dict) and
                                        isinstance(paths[k].get("per_element_ns"), int | float) and
                                        isinstance(paths[k].get("per_tensor_us"), int | float)
                                        for k in ("gradients", "parameters"))
        for paths in devices.values())
    if not ok:
        raise InvalidEvidence(f"{label} is not a calibration written by `hourtab repro --calibrate` "
                              "(devices.<device>.gradients/parameters per_element_ns, per_tensor_us).")
    found = _problems(document)
    if found:
        raise InvalidEvidence(f"{label} fails its own checks ({found[0]}); measure again with "
                              "`hourtab repro --calibrate` on a quieter machine.")
    return document


def _problems(document: dict[str, Any]) -> list[str]:
    """What the calibration's recorded checks, or its samples checked now, say is wrong with it."""
    recorded = document.get("checks")
    if isinstance(recorded, dict) and recorded.get("passed") is False:
        return [str(p) for p in recorded.get("problems") or ["its checks failed when it was measured"]]
    found = []
    for device, paths in document["devices"].items():
        for kind, path in paths.items():
            rows = path.get("samples")
            if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("numel"), int)
                                                     and isinstance(r.get("seconds"), int | float) for r in rows):
                continue
            found += [f"{device} {kind}: {p}" for p in checks.problems(
                rows, path["per_element_ns"] * 1e-9, path["per_tensor_us"] * 1e-6)]
    return found


def load_calibration(path: Path | None = None, environ: dict[str, str] | None = None) -> Calibration:
    """The calibration at ``path``, else the one stored in the data dir, else the shipped default."""
    if path is not None:
        if not path.is_file():
            raise InvalidEvidence(f"No calibration file at {path.name}.")
        document = _read(path.read_text(), path.name)
        return Calibration(document, f"{path.name}: {_describe(document)}")
    stored = stored_path(environ)
    if stored.is_file():
        document = _read(stored.read_text(), stored.name)
        return Calibration(document, f"stored calibration ({stored.name} in the data dir): {_describe(document)}")
    shipped = resources.files("incidents.tools.audit").joinpath(SHIPPED).read_text()
    document = _read(shipped, SHIPPED)
    return Calibration(document, f"shipped default, not this machine: {_describe(document)}; "
                                 "run `hourtab repro --calibrate` to measure this one")


def _describe(document: dict[str, Any]) -> str:
    machine = document.get("machine") or {}
    threads = machine.get("torch_threads")
    load = (machine.get("load_average") or {}).get("before") if isinstance(machine.get("load_average"), dict) else None
    return (f"{document.get('provenance') or 'measured'} at {document.get('measured_at') or 'an unknown time'}"
            + (f", {threads} torch thread{'s' if threads != 1 else ''}" if threads else "")
            + (f", load average {load[0]}" if isinstance(load, list) and load else ""))


@dataclass(frozen=True)
class Prediction:
    """Seconds per logging step and per training step of one watch call, on one device."""

    device: str
    per_logging_step_s: float
    per_step_s: float
    run_steps: int
    run_s: float

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "per_logging_step_s": self.per_logging_step_s,
                "per_step_s": self.per_step_s, "run_steps": self.run_steps, "run_s": self.run_s}


def predict(calibration: Calibration, log: str, log_freq: int, parameters: int, tensors: int | None,
            device: str, run_steps: int) -> Prediction:
    """What ``wandb.watch(log=log, log_freq=log_freq)`` costs per step on ``device``."""
    if device not in calibration.devices():
        device = "cpu" if "cpu" in calibration.devices() else calibration.devices()[0]
    per_logging = 0.0
    for kind in KINDS[log]:
        path = calibration.path(device, kind)
        per_logging += parameters * path["per_element_ns"] * 1e-9 + (tensors or 0) * path["per_tensor_us"] * 1e-6
    per_step = per_logging / max(log_freq, 1)
    return Prediction(device, per_logging, per_step, run_steps, per_step * run_steps)
