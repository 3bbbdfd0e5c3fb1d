"""Tiny torch training runs with known pathologies, logged by the real wandb SDK in offline mode.

Each function trains a small model on CPU with ``wandb.watch(log="all")`` attached and returns the
offline run folder, so the tests read it back through HourTab's W&B importer exactly as they would
read a client's run. The pathologies are caused, not faked: a too-large learning rate on a deep
linear net explodes, a deep sigmoid stack vanishes, a ReLU with a large negative bias dies, a layer
left out of the optimizer stays static, and random labels give the optimiser nothing to learn.
"""

from __future__ import annotations

from pathlib import Path

STEPS = 60
LOG_FREQ = 5


def _mlp(torch, widths: list[int], act) -> object:
    layers = []
    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
        layers.append(torch.nn.Linear(a, b))
        if i < len(widths) - 2 and act is not None:
            layers.append(act())
    return torch.nn.Sequential(*layers)


def _Branches(torch):  # noqa: N802 - builds a module class lazily (torch is imported inside functions)
    class Branches(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.branches = torch.nn.ModuleList(torch.nn.Linear(16, 1) for _ in range(3))

        def forward(self, x):
            return sum(b(x) for b in self.branches)

    return Branches()


def make_run(kind: str, wandb_dir: Path) -> Path:
    """Train the ``kind`` pathology and return its offline run folder."""
    import torch

    torch.set_num_threads(1)  # tiny models: threads only add contention on a shared CPU
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    teacher = torch.randn(16, 4, generator=gen)
    regression = False
    if kind == "exploding":
        # Three linear branches summed: plain SGD on their sum multiplies the error by |1 - 6·lr| per
        # step, so lr=0.37 grows it ~1.2× a step: a steady geometric explosion, finite for 60 steps.
        model = _Branches(torch)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.37)
        regression = True
    elif kind == "nonfinite":
        # A deep linear stack with inflated weights: gradients overflow to inf/NaN within a few steps.
        model = _mlp(torch, [16, 32, 32, 32, 32, 1], None)
        with torch.no_grad():
            for m in model:
                m.weight.mul_(2.5)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
        regression = True
    elif kind == "vanishing":
        model = _mlp(torch, [16] + [32] * 14 + [4], torch.nn.Sigmoid)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    elif kind == "dead_layer":
        model = _mlp(torch, [16, 32, 32, 4], torch.nn.ReLU)
        with torch.no_grad():
            model[0].bias.fill_(-100.0)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    elif kind == "static":
        model = _mlp(torch, [16, 32, 32, 4], torch.nn.ReLU)
        frozen = {id(p) for p in model[2].parameters()}
        optimizer = torch.optim.Adam([p for p in model.parameters() if id(p) not in frozen], lr=1e-2)
    elif kind in ("healthy", "stuck"):
        model = _mlp(torch, [16, 32, 32, 4], torch.nn.ReLU)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    else:
        raise ValueError(kind)

    from tests.helpers.wandb_runs import descend, run_folder, sdk_run

    config = {"pathology": kind, "lr": optimizer.param_groups[0]["lr"]}
    with sdk_run(wandb_dir, f"{kind}-run", config) as run:
        run.watch(model, log="all", log_freq=LOG_FREQ, idx=0)
        for _ in range(STEPS):
            x = torch.randn(64, 16, generator=gen)
            if regression:
                y = x.sum(dim=1, keepdim=True)
                loss = torch.nn.functional.mse_loss(model(x), y)
            else:
                y = torch.randint(0, 4, (64,), generator=gen) if kind == "stuck" else (x @ teacher).argmax(1)
                loss = torch.nn.functional.cross_entropy(model(x), y)
            run.log({"loss": descend(optimizer, loss)})
    return run_folder(run)


def _dice(pred, mask, eps: float = 1e-8) -> float:
    inter = (pred * mask).sum()
    return float((2 * inter + eps) / (pred.sum() + mask.sum() + eps))


def collapsing_segmenter(root: Path) -> Path:
    """A two-layer conv net whose hidden ReLUs never fire (bias -10): only the output bias learns, so
    BCE on sparse masks drives it to "all background" — a constant prediction."""
    import numpy as np
    import torch
    import wandb

    from tests.helpers.wandb_runs import descend, run_folder, sdk_run

    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(3)
    images = torch.rand(48, 1, 16, 16, generator=gen)
    masks = (images > 0.96).float()                       # about 4 % foreground, learnable from the pixel
    val_x, val_y = images[-8:], masks[-8:]
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 1, 1))
    with torch.no_grad():
        model[0].bias.fill_(-10.0)
        model[2].bias.zero_()
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    with sdk_run(root, "unet-collapse", {"lr": 0.05, "batch_size": 40}, project="verdicts") as run:
        for step in range(60):
            row = {}
            if step % 5 == 0:
                with torch.no_grad():
                    pred = (torch.sigmoid(model(val_x)) >= 0.5).float()
                row["val/dice"] = _dice(pred, val_y)
                row["val/prediction"] = wandb.Image((pred[0, 0].numpy() * 255).astype(np.uint8))
            loss = torch.nn.functional.binary_cross_entropy_with_logits(model(images[:40]), masks[:40])
            row["train/loss"] = descend(opt, loss)
            run.log(row)
    return run_folder(run)
