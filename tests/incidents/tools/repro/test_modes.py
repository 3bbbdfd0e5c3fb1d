import pytest

from incidents.tools.repro.modes import DEFAULT_MODES, InvalidMode, Mode, parse_mode, parse_modes


@pytest.mark.parametrize("text, expected", [
    ("baseline", Mode("baseline")),
    ("watch:all:1", Mode("watch", "all", 1)),
    (" watch:gradients:100 ", Mode("watch", "gradients", 100)),
    ("fastwatch:parameters:10", Mode("fastwatch", "parameters", 10)),
])
def test_parses_each_kind_and_prints_it_back(text, expected):
    mode = parse_mode(text)
    assert mode == expected
    assert str(mode) == text.strip()
    assert mode.watches == (mode.kind != "baseline")


@pytest.mark.parametrize("text, fragment", [
    ("watch:every:1", "log must be one of gradients, parameters, all"),
    ("watch:all:0", "freq must be a positive integer"),
    ("watch:all:x", "freq must be a positive integer"),
    ("watch:all", "allowed: baseline, watch:<gradients|parameters|all>:<freq>, fastwatch:"),
    ("histogram:all:1", "allowed: baseline"),
    ("baseline:1", "allowed: baseline"),
])
def test_errors_name_the_allowed_values(text, fragment):
    with pytest.raises(InvalidMode) as info:
        parse_mode(text)
    assert fragment in str(info.value)
    assert repr(text.strip()) in str(info.value)


def test_default_list_and_duplicates():
    assert [str(m) for m in parse_modes(DEFAULT_MODES)] == ["baseline", "watch:all:1", "watch:gradients:100"]
    assert [str(m) for m in parse_modes(("baseline", "watch:all:2,fastwatch:all:2"))] == \
        ["baseline", "watch:all:2", "fastwatch:all:2"]
    with pytest.raises(InvalidMode, match="listed twice"):
        parse_modes("baseline,watch:all:1,baseline")
    with pytest.raises(InvalidMode, match="No modes"):
        parse_modes(" , ")
