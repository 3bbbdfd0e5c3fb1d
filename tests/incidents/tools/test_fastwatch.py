"""incidents.tools.fastwatch against the real wandb.watch, in real offline W&B runs read back by wandb's own reader.

The comparison runs train the same tiny BERT on the same batch twice, once under ``wandb.watch`` and
once under ``fastwatch.watch``, then read both ``.wandb`` logs with ``wandb leet inspect --json`` (the
SDK's Go reader) and compare every histogram. The same runs also log a set of awkward tensors through
wandb's own ``log_tensor_stats`` and through our summaries.
"""

from __future__ import annotations

import copy
import gc
import json
import subprocess
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from incidents.tools import fastwatch  # noqa: E402
from incidents.tools.fastwatch import kernels, watching  # noqa: E402
from incidents.tools.fastwatch.summary import to_wandb  # noqa: E402
from tests.factories import offline_wandb  # noqa: E402

pytestmark = pytest.mark.torch

WANDB_CLI = str(Path(sys.executable).parent / "wandb")
BATCH = {"input_ids": torch.tensor([[5, 17, 42, 7, 99, 3, 12, 60], [8, 8, 1, 2, 77, 31, 4, 0]]),
         "labels": torch.tensor([3, 11])}
INF_ROW = 90  # a token id absent from BATCH: its embedding row can hold inf without touching the loss


@contextmanager
def offline(root: Path):
    import wandb

    with offline_wandb(root):
        yield wandb


def tiny_bert():
    torch.manual_seed(1234)
    config = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=37, max_position_embeddings=16, num_labels=14,
                                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return transformers.BertForSequenceClassification(config)


def near_bin_edges(lo: float, hi: float, dtype, spread: int = 8, copies: int = 5) -> torch.Tensor:
    """Values a few ulps either side of every interior bin edge of [lo, hi] (shuffled, repeated).

    Any change to histc's arithmetic (say, multiplying by 64/w instead of dividing) moves some of
    these into a neighbouring bin; repeating them sends them through the kernel's paired loop too.
    """
    lo_, hi_ = dtype(lo), dtype(hi)
    values = [lo_, hi_]
    for j in range(1, 64):
        centre = dtype(float(lo_) + j * (float(hi_) - float(lo_)) / 64)
        below = above = centre
        values.append(centre)
        for _ in range(spread):
            below, above = np.nextafter(below, dtype(-np.inf)), np.nextafter(above, dtype(np.inf))
            values += [below, above]
    x = np.tile(np.array(values, dtype=dtype), copies)
    np.random.default_rng(0).shuffle(x)
    return torch.from_numpy(x)


def awkward_tensors() -> dict[str, object]:
    """Every case wandb's log_tensor_stats treats specially, plus values sitting on bin edges."""
    g = torch.Generator().manual_seed(7)
    with_nonfinite = torch.randn(500, generator=g)
    with_nonfinite[[3, 50, 400]] = torch.tensor([float("nan"), float("inf"), -float("inf")])
    sparse_pos = torch.sparse_coo_tensor(torch.tensor([[0, 2, 5], [1, 1, 3]]), torch.tensor([0.5, 2.0, 3.5]), (6, 4))
    sparse_mixed = torch.sparse_coo_tensor(torch.tensor([[0, 1, 2, 3]]), torch.tensor([-1.0, 4.0, 2.5, -3.0]), (40,))
    return {
        "gradients/randn": torch.randn(3000, 7, generator=g),
        "gradients/edges": torch.linspace(-1, 1, 129),  # every value on a bin edge
        "gradients/edges_f64": torch.linspace(-3, 5, 513, dtype=torch.float64),
        "gradients/near_edges": near_bin_edges(-3.3, 17.9, np.float32),
        "gradients/near_edges_f64": near_bin_edges(0.001, 0.001007, np.float64),
        "gradients/narrow": torch.tensor([1.0, 1.0000001, 1.0000002, 1.0000001], dtype=torch.float32),
        "gradients/huge_range": torch.tensor([-3e35, 1e-30, 2e35, 7.0]),
        "gradients/nonfinite": with_nonfinite,
        "gradients/all_nan": torch.full((10,), float("nan")),
        "gradients/empty": torch.empty(0),
        "gradients/constant": torch.full((4, 4), 0.25),
        "gradients/bf16": torch.randn(257, generator=g).to(torch.bfloat16),
        "gradients/fp16": (torch.randn(300, generator=g) * 100).to(torch.float16),
        "gradients/int": torch.arange(-5, 20),
        "gradients/sparse_pos": sparse_pos,
        "gradients/sparse_mixed": sparse_mixed,
    }


def train(model, run, steps: int, before_log=None):
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for step in range(steps):
        if step == steps - 1:  # last step: a parameter holds inf values (both watches must drop them)
            with torch.no_grad():
                model.bert.embeddings.word_embeddings.weight[INF_ROW] = float("inf")
        loss = model(**BATCH).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        if before_log:
            before_log()
        run.log({"loss": loss.item()})
        losses.append(loss.item())
    return losses


def leet_history(run) -> list[dict]:
    log = next(Path(run.dir).parent.glob("run-*.wandb"))
    out = subprocess.run([WANDB_CLI, "leet", "inspect", "--json", str(log)], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    return [json.loads(line)["history"]["item"] for line in out.splitlines()
            if line.strip() and '"type":"history"' in line]


def histograms(row: dict) -> dict[str, tuple[list, list]]:
    keys = [k[: -len("._type")] for k, v in row.items() if k.endswith("._type") and v == "histogram"]
    return {k: (row[k + ".bins"], row[k + ".values"]) for k in keys}


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """Histories of the wandb.watch run and the fastwatch run, plus what each was fed."""
    root = tmp_path_factory.mktemp("wandb-compare")
    model = tiny_bert()
    tensors = awkward_tensors()
    with offline(root) as wandb:
        ref_model = copy.deepcopy(model)
        run = wandb.init(project="fastwatch-test", name="wandb-watch")
        run.watch(ref_model, log="all", log_freq=1, idx=0)
        ref_losses = train(ref_model, run, steps=3)
        run.unwatch(ref_model)
        for key, t in tensors.items():
            run._torch.log_tensor_stats(t, key)
        run.log({"phase": "awkward"})
        run.finish()
        theirs = leet_history(run)

        run = wandb.init(project="fastwatch-test", name="fastwatch")
        handle = fastwatch.watch(model, log="all", log_freq=1, run=run)
        our_losses = train(model, run, steps=3, before_log=handle.flush)
        fastwatch.unwatch(model)
        for key, t in tensors.items():
            summary = kernels.summarise_cpu(key, t)
            if summary.has_histogram:
                run.log({key: to_wandb(summary)}, commit=False)
        run.log({"phase": "awkward"})
        run.finish()
        ours = leet_history(run)
    return {"theirs": theirs, "ours": ours, "ref_losses": ref_losses, "our_losses": our_losses,
            "handle": handle, "params": len(list(model.parameters()))}


def assert_same_histograms(ours: dict, theirs: dict) -> None:
    assert sorted(ours) == sorted(theirs)
    for key in theirs:
        (our_bins, our_values), (their_bins, their_values) = ours[key], theirs[key]
        assert our_values == their_values, key
        np.testing.assert_allclose(our_bins, their_bins, rtol=1e-7, atol=0, err_msg=key)


def test_training_histograms_identical_to_wandb_watch(compared):
    assert compared["our_losses"] == compared["ref_losses"]  # same model, same batch, same values
    theirs = [r for r in compared["theirs"] if "loss" in r]
    ours = [r for r in compared["ours"] if "loss" in r]
    assert len(ours) == len(theirs) == 3
    single_bins = 0
    for our_row, their_row in zip(ours, theirs, strict=True):
        their_h, our_h = histograms(their_row), histograms(our_row)
        assert len(their_h) == 2 * compared["params"]  # every parameter and every gradient
        assert_same_histograms(our_h, their_h)
        single_bins += sum(1 for bins, _ in their_h.values() if len(bins) == 2)
    assert single_bins > 0  # LayerNorm weights (all 1.0) and zero biases: wandb's min == max case


def test_nonfinite_values_are_dropped_like_wandb_and_counted(compared):
    last = [r for r in compared["ours"] if "loss" in r][-1]
    key = "bert.embeddings.word_embeddings.weight"
    _, values = histograms(last)[f"parameters/{key}"]
    assert sum(values) == 100 * 32 - 32  # the inf row is not in the histogram, as in wandb's
    assert last[f"fastwatch/inf/parameters/{key}"] == 32
    assert last["fastwatch/nonfinite/parameters"] == 32
    assert last["fastwatch/nonfinite/gradients"] == 0
    assert [r["fastwatch/step"] for r in compared["ours"] if "loss" in r] == [1, 2, 3]
    assert compared["handle"].nonfinite == {"gradients": 0, "parameters": 32}


def test_awkward_tensors_identical_to_wandb_log_tensor_stats(compared):
    theirs = histograms(next(r for r in compared["theirs"] if r.get("phase") == "awkward"))
    ours = histograms(next(r for r in compared["ours"] if r.get("phase") == "awkward"))
    assert "gradients/all_nan" not in theirs and "gradients/empty" not in theirs  # wandb logs nothing
    assert len(theirs["gradients/constant"][0]) == 2
    assert_same_histograms(ours, theirs)


def test_kernel_counts_equal_torch_histc():
    g = torch.Generator().manual_seed(3)
    cases = [torch.randn(100_003, generator=g), torch.randn(50_000, generator=g, dtype=torch.float64),
             torch.linspace(-7, 9, 64 * 40 + 1), torch.rand(9_000, generator=g) * 1e-6 + 1,
             torch.tensor([0.0, 1e-38, 2e-38, 3e-45, 1.0]),
             torch.cat([torch.zeros(20_000), torch.randn(300, generator=g)]),
             near_bin_edges(0.1, 0.7, np.float32), near_bin_edges(-3.3, 17.9, np.float32),
             near_bin_edges(-3.3, 17.9, np.float64), near_bin_edges(0.001, 0.001007, np.float64)]
    for t in cases:
        lo, hi = (v.item() for v in torch.aminmax(t))
        expected = torch.histc(t, bins=64, min=lo, max=hi).to(torch.int64).numpy()
        np.testing.assert_array_equal(kernels.histogram_cpu(t, lo, hi), expected)


def test_kernel_split_across_threads_counts_the_same():
    t = torch.cat([near_bin_edges(-3.3, 17.9, np.float32, copies=1)] * 200 + [torch.zeros(2_000_000)])
    lo, hi = (v.item() for v in torch.aminmax(t))
    single = kernels.histogram_cpu(t, lo, hi)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        split = kernels.histogram_cpu(t, lo, hi)
    finally:
        torch.set_num_threads(threads)
    np.testing.assert_array_equal(split, single)
    np.testing.assert_array_equal(split, torch.histc(t, bins=64, min=lo, max=hi).to(torch.int64).numpy())


def test_device_batch_path_agrees_with_cpu_path():
    tensors = awkward_tensors()
    batch = kernels.summarise_device(list(tensors.items())).wait()
    by_key = {s.key: s for s in batch}
    assert sorted(by_key) == sorted(tensors)
    for key, t in tensors.items():
        a, b = by_key[key], kernels.summarise_cpu(key, t)
        assert (a.lo, a.hi, a.finite, a.nan, a.inf, a.sparse_zeros) == (b.lo, b.hi, b.finite, b.nan, b.inf,
                                                                        b.sparse_zeros), key
        assert (a.counts is None) == (b.counts is None), key
        if a.counts is not None:
            np.testing.assert_array_equal(a.counts, b.counts, err_msg=key)


@pytest.fixture(scope="module")
def shared_run(tmp_path_factory):
    with offline(tmp_path_factory.mktemp("wandb-behaviour")) as wandb:
        run = wandb.init(project="fastwatch-behaviour")
        yield run
        fastwatch.unwatch()
        run.finish()


def mlp(dtype=torch.float32):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.Tanh(), torch.nn.Linear(12, 2)).to(dtype)


def test_counts_backward_passes_not_evaluation_passes(shared_run):
    model = mlp()
    handle = fastwatch.watch(model, log="gradients", log_freq=3, run=shared_run)
    try:
        for _ in range(7):
            model(torch.randn(5, 6)).sum().backward()
            with torch.no_grad():
                model(torch.randn(5, 6))  # evaluation: no backward, not counted
            model(torch.randn(5, 6))  # a forward whose graph is never backpropagated: not counted
        handle.flush()
        assert handle.passes == 7
        assert handle.logging_steps == 2  # passes 3 and 6
        assert handle.histograms_logged == 2 * 4
        assert handle.last_step[0] == 6
        assert handle.hook_seconds > 0 and handle.errors == []
    finally:
        fastwatch.unwatch(model)


def test_gradient_accumulation_logs_each_micro_batch_gradient(shared_run):
    model, reference = mlp(), mlp()
    micro = [torch.randn(4, 6, generator=torch.Generator().manual_seed(s)) for s in (1, 2)]
    handle = fastwatch.watch(model, log="gradients", log_freq=2, run=shared_run)
    try:
        for x in micro:  # two micro-batches, one optimizer step: .grad holds their sum
            model(x).sum().backward()
        handle.flush()
    finally:
        fastwatch.unwatch(model)
    logged = handle.last_step[1]["gradients/0.weight"]
    alone = torch.autograd.grad(reference(micro[1]).sum(), reference[0].weight)[0]
    expected = kernels.summarise_cpu("gradients/0.weight", alone)
    assert (logged.lo, logged.hi) == (expected.lo, expected.hi)
    np.testing.assert_array_equal(logged.counts, expected.counts)
    accumulated = kernels.summarise_cpu("g", model[0].weight.grad)
    assert (accumulated.lo, accumulated.hi) != (logged.lo, logged.hi)  # not the accumulated .grad


def test_bf16_gradients_and_nonfinite_gradients(shared_run):
    model = mlp(torch.bfloat16)
    handle = fastwatch.watch(model, log="all", log_freq=1, run=shared_run)
    try:
        model(torch.randn(3, 6, dtype=torch.bfloat16)).sum().backward()
        handle.flush()
        first = handle.last_step[1]
        x = torch.randn(3, 6, dtype=torch.bfloat16)
        x[0, 0] = float("inf")
        model(x).sum().backward()
        handle.flush()
    finally:
        fastwatch.unwatch(model)
    assert all(s.finite + s.nonfinite == p.numel() for s, p in
               zip((first[f"gradients/{n}"] for n, _ in model.named_parameters()), model.parameters(), strict=True))
    second = handle.last_step[1]
    assert second["gradients/0.weight"].nonfinite > 0
    assert handle.nonfinite["gradients"] == sum(s.nonfinite for k, s in second.items() if k.startswith("grad"))


def test_unwatch_and_garbage_collection_remove_the_hooks(shared_run):
    model = mlp()
    weight = model[0].weight
    handle = fastwatch.watch(model, log="all", log_freq=1, run=shared_run)
    assert weight._backward_hooks and weight._post_accumulate_grad_hooks
    with pytest.raises(fastwatch.FastWatchError, match="already watched"):
        fastwatch.watch(model, run=shared_run)
    fastwatch.unwatch(model)
    assert not weight._backward_hooks and not weight._post_accumulate_grad_hooks and not handle.active
    model(torch.randn(2, 6)).sum().backward()
    assert handle.passes == 0
    with pytest.warns(RuntimeWarning, match="not watched"):
        fastwatch.unwatch(model)

    model = mlp()
    weight = model[0].weight
    handle = fastwatch.watch(model, log="gradients", log_freq=1, run=shared_run)
    del model
    gc.collect()
    assert not handle.active and handle not in watching.watched()
    assert not weight._backward_hooks


def test_backward_that_raises_leaves_nothing_behind(shared_run):
    model = mlp()
    handle = fastwatch.watch(model, log="gradients", log_freq=1, run=shared_run)
    raised = 5
    try:
        for _ in range(raised):
            hidden = model[0](torch.randn(2, 6))
            hidden.register_hook(lambda g: (_ for _ in ()).throw(RuntimeError("boom")))
            with pytest.raises(RuntimeError, match="boom"):
                model[2](torch.tanh(hidden)).sum().backward()
        model(torch.randn(2, 6)).sum().backward()
        handle.flush()
        assert handle._passes.current is None  # nothing of the raised passes is held
        assert handle.passes == raised + 1 and handle.last_step[0] == handle.passes
        assert handle.logging_steps == raised + 1  # what the raised passes got is logged, as wandb.watch does
        assert len(handle.last_step[1]) == 4 and handle.errors == []
    finally:
        fastwatch.unwatch(model)


def test_logging_failure_is_reported_not_raised(tmp_path):
    model = mlp()
    with offline(tmp_path) as wandb:
        finished = wandb.init(project="fastwatch-finished")
        finished.finish()
        handle = fastwatch.watch(model, log="all", log_freq=1, run=finished)
        with pytest.warns(RuntimeWarning, match="could not log step 1"):
            model(torch.randn(2, 6)).sum().backward()  # training goes on
            handle.flush()
        fastwatch.unwatch(model)
    assert handle.histograms_logged == 0 and len(handle.errors) == 1


def test_gradients_are_not_copied_unlike_register_multi_grad_hook(shared_run):
    """Why passes.py does not use register_multi_grad_hook: holding gradients makes .grad a copy."""
    from torch.autograd.graph import register_multi_grad_hook

    def grads_moved_into_dot_grad(model) -> list[bool]:
        produced = {}
        hooks = [p.register_hook(lambda g, i=i: produced.__setitem__(i, g.data_ptr()))  # keeps no reference
                 for i, p in enumerate(model.parameters())]
        model.zero_grad(set_to_none=True)
        model(torch.randn(4, 6)).sum().backward()
        for h in hooks:
            h.remove()
        return [p.grad.data_ptr() == produced[i] for i, p in enumerate(model.parameters())]

    model = mlp()
    assert all(grads_moved_into_dot_grad(model))
    handle = register_multi_grad_hook(list(model.parameters()), lambda grads: None)
    assert not all(grads_moved_into_dot_grad(model))
    handle.remove()
    watch = fastwatch.watch(model, log="all", log_freq=1, run=shared_run)
    try:
        assert all(grads_moved_into_dot_grad(model)) and watch.passes == 1 and watch.logging_steps == 1
    finally:
        fastwatch.unwatch(model)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"log": "weights"}, "log must be one of gradients, parameters, all"),
    ({"log": None}, "log must be one of"),
    ({"log_freq": 0}, "positive integer"),
    ({"log_freq": 2.5}, "positive integer"),
])
def test_bad_arguments_are_refused(shared_run, kwargs, message):
    with pytest.raises(fastwatch.FastWatchError, match=message):
        fastwatch.watch(mlp(), run=shared_run, **kwargs)


def test_frozen_model_is_refused(shared_run):
    model = mlp()
    model.requires_grad_(False)
    with pytest.raises(ValueError, match="no parameter with requires_grad"):
        fastwatch.watch(model, run=shared_run)


def test_run_finish_flushes_and_detaches(tmp_path):
    model = mlp()
    with offline(tmp_path) as wandb:
        run = wandb.init(project="fastwatch-finish")
        handle = fastwatch.watch(model, log="all", log_freq=1, run=run)
        model(torch.randn(2, 6)).sum().backward()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            run.finish()
    assert handle.histograms_logged == 8 and not handle.active and handle.errors == []
    assert not model[0].weight._backward_hooks and not model[0].weight._post_accumulate_grad_hooks


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_batch_matches_cpu_on_the_same_values(shared_run):
    model = mlp().cuda()
    handle = fastwatch.watch(model, log="all", log_freq=1, run=shared_run)
    try:
        model(torch.randn(64, 6, device="cuda")).sum().backward()
        handle.flush()
    finally:
        fastwatch.unwatch(model)
    logged = handle.last_step[1]
    for name, p in model.named_parameters():
        ours, cpu = logged[f"parameters/{name}"], kernels.summarise_cpu("p", p.detach().cpu())
        assert (ours.lo, ours.hi) == (cpu.lo, cpu.hi)
        np.testing.assert_array_equal(ours.counts, cpu.counts)
    assert logged["gradients/0.weight"].finite == 12 * 6
