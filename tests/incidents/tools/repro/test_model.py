import pytest

from incidents.tools.repro.model import PRESETS, ModelSpec, validate_spec
from incidents.tools.repro.modes import InvalidReproArgument

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


def test_bert_base_has_the_incidents_201_tensors_with_labels_in_the_config():
    from incidents.tools.repro.model import build_model, describe_model

    spec = PRESETS["bert-base"]
    model = build_model(spec, seed=0, device="meta")  # architecture only: no weights allocated
    info = describe_model(model, spec, "bert-base")
    assert info["parameter_tensors"] == spec.expected_parameter_tensors == 201
    assert info["parameters"] == 109_493_006
    assert model.config.num_labels == 14
    assert model.classifier.out_features == 14


def test_tiny_preset_and_overrides():
    from incidents.tools.repro.model import build_model

    spec = PRESETS["tiny"].with_overrides(layers=3, num_labels=5, seq_len=None)
    assert (spec.layers, spec.hidden, spec.heads, spec.intermediate, spec.num_labels, spec.seq_len) == \
        (3, 128, 2, 512, 5, 128)
    model = build_model(spec, seed=0, device="meta")
    assert sum(1 for _ in model.named_parameters()) == spec.expected_parameter_tensors == 57
    assert model.classifier.out_features == 5


def test_same_seed_same_weights_and_batches():
    from incidents.tools.repro.model import build_model, synthetic_batches

    spec = PRESETS["tiny"].with_overrides(layers=1, seq_len=8)
    a, b, c = build_model(spec, 7), build_model(spec, 7), build_model(spec, 8)
    for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        assert torch.equal(pa, pb), name
    assert not all(torch.equal(pa, pc) for pa, pc in zip(a.parameters(), c.parameters(), strict=True))
    first, again = synthetic_batches(spec, 3, 2, "cpu"), synthetic_batches(spec, 3, 2, "cpu")
    assert all(torch.equal(x[k], y[k]) for x, y in zip(first, again, strict=True) for k in x)
    assert first[0]["input_ids"].shape == (spec.batch_size, spec.seq_len)
    assert int(first[0]["input_ids"].max()) < spec.vocab_size
    assert not torch.equal(first[0]["input_ids"], first[1]["input_ids"])


@pytest.mark.parametrize("overrides, fragment", [
    ({"hidden": 130}, "multiple of --heads"),
    ({"seq_len": 600}, "512 positions"),
    ({"layers": 0}, "--layers must be positive"),
    ({"num_labels": 1}, "at least 2"),
])
def test_bad_shapes_are_refused_before_building(overrides, fragment):
    with pytest.raises(InvalidReproArgument, match=fragment):
        validate_spec(ModelSpec().with_overrides(**overrides))
