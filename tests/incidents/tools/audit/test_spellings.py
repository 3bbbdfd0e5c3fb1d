"""Every common spelling of a watch call is found, with its log, log_freq and the watched model's size;
dead code is left alone (issue 21, items 1–3). Scripts are read from tests/data/audit, never run."""

from __future__ import annotations

import pytest

from tests.helpers.audit_cli import SCRIPTS, as_json, audit, by_rule, script

#: Parameter counts of BertForSequenceClassification with 14 labels as transformers builds it
#: (test_model_sizes_match_transformers builds them on the meta device).
BERT_BASE_14 = (109_493_006, 201)
BERT_LARGE_14 = (335_156_238, 393)


@pytest.fixture(autouse=True)
def empty_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HOURTAB_DATA_DIR", str(tmp_path / "data"))


@pytest.mark.parametrize("name, line, log, freq, size, via", [
    # import wandb as wb; wb.watch(...) in a helper function, constants at module level
    ("alias_helper", 13, "all", 10, BERT_BASE_14, "WATCH_EVERY = 10 (line 7)"),
    # the same alias at top level; AutoModelFor… with bert-large
    ("alias_toplevel", 8, "all", 1, BERT_LARGE_14, "literal"),
    # Lightning: logger = WandbLogger(...); logger.watch(model, log="all", log_freq=10)
    ("lightning_logger", 23, "all", 10, BERT_BASE_14, "literal"),
    # wandb.watch(model, **DEBUG_WATCH) with DEBUG_WATCH a dict literal
    ("dict_kwargs", 11, "all", 1, BERT_BASE_14, "DEBUG_WATCH = {'log': 'all', 'log_freq': 1} (line 6); "
                                                "**DEBUG_WATCH['log_freq'] = 1"),
    # from wandb import watch as watch_model, with a function constant
    ("run_watch", 21, "gradients", 5, BERT_LARGE_14, "every = 5 (line 20)"),
    # wandb.run.watch with an os.environ.get default
    ("run_watch", 22, "parameters", 1, BERT_LARGE_14, "LOG_FREQ = 1 (line 8), default of environment variable "
                                                      "'LOG_FREQ'"),
])
def test_each_spelling_is_an_error_with_its_settings_and_model(tmp_path, name, line, log, freq, size, via):
    result = audit(str(script(tmp_path, name)), "--json")
    assert result.exit_code == 1, result.output
    report = as_json(result)
    watch = next(f for f in by_rule(report)["wandb_watch"] if f["line"] == line)
    assert watch["severity"] == "error"
    assert (watch["evidence"]["log"], watch["evidence"]["log_freq"]) == (log, freq)
    assert watch["evidence"]["log_freq_via"] == via
    model = watch["evidence"]["model"]
    assert (model["parameters"], model["tensors"]) == size
    assert "num_labels=14" in model["source"] and "14-label classifier" in model["source"]


def test_lightning_watch_is_recognised_as_the_loggers(tmp_path):
    report = as_json(audit(str(script(tmp_path, "lightning_logger")), "--json"))
    (watch,) = report["findings"]
    assert watch["evidence"]["api"] == "WandbLogger.watch"
    assert watch["message"].startswith('WandbLogger.watch(log="all", log_freq=10) on bert-base-uncased')
    assert '+    logger.watch(model, log="gradients", log_freq=100)' in watch["diff"]


def test_trainer_reporting_to_wandb_with_wandb_watch_set(tmp_path):
    report = as_json(audit(str(script(tmp_path, "trainer_report")), "--json"))
    (watch,) = report["findings"]
    assert watch["location"] == "train.py:13" and "Trainer reporting to wandb" in watch["evidence"]["api"]
    assert watch["evidence"]["log"] == "all"
    assert watch["evidence"]["log_via"] == "os.environ['WANDB_WATCH'] = 'all' (line 6)"
    # WandbCallback: log_freq=max(100, logging_steps) with logging_steps=10
    assert watch["evidence"]["log_freq"] == 100
    assert watch["evidence"]["log_freq_via"].startswith("max(100, logging_steps=10)")
    assert (watch["evidence"]["model"]["parameters"], watch["evidence"]["model"]["tensors"]) == BERT_BASE_14
    assert "num_labels=14" in watch["evidence"]["model"]["source"]
    assert watch["severity"] == "info"  # every 100 steps: the diagnosis's "too rarely to matter"


def test_trainer_without_wandb_watch_logs_no_histograms(tmp_path):
    path = tmp_path / "train.py"
    path.write_text((SCRIPTS / "trainer_report.py.txt").read_text().replace('os.environ["WANDB_WATCH"] = "all"\n', ""))
    (watch,) = as_json(audit(str(path), "--json"))["findings"]
    assert watch["severity"] == "info" and "logs no histograms" in watch["message"]
    assert "WANDB_WATCH is not set in the script" in watch["message"]
    elsewhere = tmp_path / "tb.py"
    elsewhere.write_text(path.read_text().replace('report_to="wandb"', 'report_to=["tensorboard"]'))
    assert as_json(audit(str(elsewhere), "--json"))["findings"] == []


def test_constant_false_condition_is_info_and_names_it(tmp_path):
    result = audit(str(script(tmp_path, "debug_disabled")), "--json")
    assert result.exit_code == 0, result.output
    dead, live = sorted(by_rule(as_json(result))["wandb_watch"], key=lambda f: f["line"])
    assert dead["severity"] == "info" and dead["evidence"]["log_freq"] == 1
    assert "disabled by DEBUG = False (line 6)" in dead["message"] and dead["diff"] == ""
    assert live["severity"] == "info" and live["evidence"]["log_freq"] == 100
    flipped = tmp_path / "on.py"
    flipped.write_text((SCRIPTS / "debug_disabled.py.txt").read_text().replace("DEBUG = False", "DEBUG = True"))
    on, off = sorted(by_rule(as_json(audit(str(flipped), "--json")))["wandb_watch"], key=lambda f: f["line"])
    assert on["severity"] == "error" and "disabled by DEBUG = True (line 6) (else branch" in off["message"]


def test_commented_out_and_quoted_calls_give_no_finding(tmp_path):
    result = audit(str(script(tmp_path, "commented_out")), "--json")
    assert result.exit_code == 0 and as_json(result)["findings"] == []


def test_undecidable_condition_keeps_its_severity_and_says_which(tmp_path):
    result = audit(str(script(tmp_path, "undecided_debug")), "--json")
    assert result.exit_code == 1
    guarded, unresolved = sorted(by_rule(as_json(result))["wandb_watch"], key=lambda f: f["line"])
    assert guarded["severity"] == "error"
    assert "runs only when `args.debug` (line 15) is true: argparse --debug default False (line 9)" \
        in guarded["message"]
    assert guarded["evidence"]["condition"]["state"] == "undecided"
    # log_freq from a YAML file: said so, never the wandb default, and judged by the worst plausible value
    assert unresolved["severity"] == "error" and unresolved["evidence"]["log_freq"] is None
    assert "log_freq could not be resolved (config['log_freq']: yaml.safe_load(open('train.yaml')) is computed when " \
           "the script runs)" in unresolved["message"] and "log_freq 1–1000" in unresolved["message"]


def test_unresolved_value_on_the_cpu_predicts_a_range(tmp_path):
    path = tmp_path / "train.py"
    path.write_text((SCRIPTS / "tiny_cpu.py.txt").read_text().replace(
        'log_freq=1)', 'log_freq=settings.freq)').replace("import torch\n", "import torch\nsettings = load()\n"))
    (watch,) = as_json(audit(str(path), "--json"))["findings"]
    assert watch["prediction"] is None  # no single figure that could be read as the prediction
    p = watch["prediction_range"]
    assert p["range"] and p["min_at"] == {"log": "all", "log_freq": 1000} and p["max_at"] == {"log": "all",
                                                                                              "log_freq": 1}
    assert p["max_per_step_s"] == pytest.approx(1000 * p["min_per_step_s"])
    assert f"+{p['min_per_step_s']:.3g} to +{p['max_per_step_s']:.3g} s per step" in watch["message"]


@pytest.mark.parametrize("source, log, freq", [
    ("import wandb\nrun = wandb.init()\nrun.watch(model, 'gradients', 'all', 10)\n", "all", 10),
    # a function sees the module's binding when it runs, even one written below it
    ("import wandb\ndef go(model):\n    wandb.init().watch(model, log='all', log_freq=LOG)\nLOG = 3\ngo(m)\n",
     "all", 3),
    ("import wandb\ndef f(model):\n    freq = 1\n    if x:\n        freq = 7\n    wandb.watch(model, log='all', "
     "log_freq=freq)\n", "all", None),
    ("from wandb import *\nwatch(model, log='parameters', log_freq=2)\n", "parameters", 2),
    ("import wandb\nW = dict(log='all')\nwandb.watch(model, log_freq=4, **W)\n", "all", 4),
    ("import wandb\nclass T:\n    def fit(self):\n        self.logger.experiment.watch(self, log='all', log_freq=2)\n"
     "from lightning.pytorch.loggers import WandbLogger\n", "all", 2),
])
def test_other_spellings_resolve_as_python_would(tmp_path, source, log, freq):
    path = tmp_path / "train.py"
    path.write_text(source)
    (watch,) = as_json(audit(str(path), "--json", "--params", "50000000"))["findings"]
    assert (watch["evidence"]["log"], watch["evidence"]["log_freq"]) == (log, freq)
    if freq is None:  # assigned 1 or 7 depending on x: both are candidates, neither is assumed
        assert "freq may be any of 1 (line 3), 7 (line 5)" in watch["message"]
        assert watch["prediction_range"]["min_at"]["log_freq"] == 7
        assert watch["prediction_range"]["max_at"]["log_freq"] == 1


def test_a_local_function_named_watch_is_not_wandb(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("import wandb\ndef watch(model, log, log_freq):\n    pass\nwatch(model, log='all', log_freq=1)\n"
                    "import other\nother.watch(model, log='all', log_freq=1)\n")
    assert as_json(audit(str(path), "--json", "--params", "50000000"))["findings"] == []


@pytest.mark.torch
@pytest.mark.parametrize("cls, sizes, labels", [
    ("BertForSequenceClassification", {}, 14),
    ("BertForSequenceClassification", {"hidden_size": 1024, "num_hidden_layers": 24, "intermediate_size": 4096,
                                       "num_attention_heads": 16}, 14),
    ("BertForTokenClassification", {"hidden_size": 128, "num_hidden_layers": 2, "intermediate_size": 512,
                                    "num_attention_heads": 2}, 5),
    ("BertModel", {"hidden_size": 128, "num_hidden_layers": 3, "intermediate_size": 256, "num_attention_heads": 2}, 2),
    ("BertForMaskedLM", {"hidden_size": 64, "num_hidden_layers": 1, "intermediate_size": 128,
                         "num_attention_heads": 2, "vocab_size": 1000}, 2),
])
def test_model_sizes_match_transformers(tmp_path, cls, sizes, labels):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(num_labels=labels, **sizes)
    with torch.device("meta"):
        model = getattr(transformers, cls)(config)
    parameters = list(model.parameters())
    stated = ", ".join(f"{k}={v}" for k, v in {**sizes, "num_labels": labels}.items())
    path = tmp_path / "train.py"
    path.write_text(f"import wandb\nfrom transformers import BertConfig, {cls}\n"
                    f"model = {cls}(BertConfig({stated}))\nwandb.watch(model, log='all', log_freq=1)\n")
    report = as_json(audit(str(path), "--json"))
    assert (report["model"]["parameters"], report["model"]["tensors"]) == \
        (sum(p.numel() for p in parameters), len(parameters))


def test_conditions_python_decides_and_ones_it_does_not(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("from typing import TYPE_CHECKING\ntry:\n    import wandb\nexcept ImportError:\n    wandb = None\n"
                    "if TYPE_CHECKING:\n    wandb.watch(model, log='all', log_freq=1)\n"
                    "if wandb is not None:\n    wandb.watch(model, log='all', log_freq=2)\n"
                    "while False:\n    wandb.watch(model, log='all', log_freq=3)\n")
    result = audit(str(path), "--json", "--params", "50000000")
    findings = {f["line"]: f for f in as_json(result)["findings"]}
    assert findings[7]["severity"] == "info" and "typing.TYPE_CHECKING is False" in findings[7]["message"]
    assert findings[11]["severity"] == "info" and "disabled: `False` is always false" in findings[11]["message"]
    # wandb may be the module or None: the call keeps its severity and names the test
    assert findings[9]["severity"] == "error" and "runs only when `wandb is not None` (line 8) is true" \
        in findings[9]["message"]
    assert result.exit_code == 1
