"""Forecast sentences and the burn-up SVG, hand-computed."""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET

from hourtab.retainers import chart
from hourtab.retainers.chart import WIDE, burnup_svgs
from hourtab.retainers.forecast import forecast
from hourtab.retainers.presentation import format_hours, used_percent
from hourtab.retainers.terms import HOUR, Terms
from tests.helpers.ledger_frames import frame, on
from tests.helpers.ledger_oracle import build_ledger

NOV = Terms(allotment_s=20 * HOUR, start=dt.date(2025, 11, 1))


def burnup_svg(period, available_s, daily, today):
    """The wide drawing alone."""
    return burnup_svgs(period, available_s, daily, today, layouts=(WIDE,))[0]


def _current(entries, today):
    ledger = build_ledger(NOV, frame(entries), as_of=dt.datetime.combine(today, dt.time(12), dt.UTC))
    daily = {d.date(): int(s) for d, s in ledger.entries.groupby("day")["rounded_s"].sum().items()}
    return ledger.current, daily


def test_run_out_date_at_current_pace():
    # 10 h in the first 10 days → 1 h/day → the 20 h are gone at the end of day 20.
    balance, daily = _current([on(2025, 11, d, 1) for d in range(1, 11)], dt.date(2025, 11, 10))
    f = forecast(balance, daily, dt.date(2025, 11, 10))
    assert (f.text, f.projected_s) == ("at this pace, hours run out on 20 Nov", 30 * HOUR)


def test_on_pace_projection():
    # 4 h in 15 days of a 30-day month → 8 h by the end.
    balance, daily = _current([on(2025, 11, 2, 2), on(2025, 11, 5, 1), on(2025, 11, 9, 1)], dt.date(2025, 11, 15))
    f = forecast(balance, daily, dt.date(2025, 11, 15))
    assert f.text == "on pace to use 8 of 20 h"
    assert f.basis == "4 h over the first 15 days (work on 3 days), continued at the same daily pace for all 30 days"


def test_a_kickoff_on_day_one_is_too_early_to_forecast():
    # 3 h on 1 Nov would "run out on 7 Nov" at that pace: no client should read that.
    balance, daily = _current([on(2025, 11, 1, 3)], dt.date(2025, 11, 1))
    f = forecast(balance, daily, dt.date(2025, 11, 1))
    assert (f.kind, f.text, f.projected_s) == ("too_early", "too early to forecast", None)
    assert f.basis == ("1 day of 30 elapsed, work logged on 1 day; a forecast needs 8 days elapsed "
                       "and work on 3 days")


def test_a_quarter_elapsed_but_work_on_two_days_is_still_too_early():
    balance, daily = _current([on(2025, 11, 1, 3), on(2025, 11, 2, 3)], dt.date(2025, 11, 12))
    assert forecast(balance, daily, dt.date(2025, 11, 12)).kind == "too_early"


def test_ran_out_names_the_day_it_happened():
    balance, daily = _current([on(2025, 11, 3, 15), on(2025, 11, 6, 7)], dt.date(2025, 11, 10))
    assert forecast(balance, daily, dt.date(2025, 11, 10)).text == "hours ran out on 6 Nov"
    assert used_percent(balance) == 100


def test_nothing_used_yet():
    balance, daily = _current([], dt.date(2025, 11, 5))
    assert forecast(balance, daily, dt.date(2025, 11, 5)).kind == "none"


def test_format_hours():
    assert [format_hours(s) for s in (45000, 72000, 0, 360, 100, -7200)] == ["12.5", "20", "0", "0.1", "0.03", "-2"]


def test_burnup_svg_is_well_formed_and_scriptless():
    balance, daily = _current([on(2025, 11, 3, 5), on(2025, 11, 9, 3)], dt.date(2025, 11, 10))
    svg = burnup_svg(balance.period, balance.available_s, daily, dt.date(2025, 11, 10))
    root = ET.fromstring(svg)
    tags = {el.tag.split("}")[1] for el in root.iter()}
    assert "script" not in tags and "foreignObject" not in tags and "path" in tags
    assert "8 of 20 h" in root.find("{http://www.w3.org/2000/svg}title").text
    assert "http" not in svg.replace("http://www.w3.org/2000/svg", "")
    assert svg == burnup_svg(balance.period, balance.available_s, daily, dt.date(2025, 11, 10))  # deterministic


def test_burnup_draws_the_hours_used_the_pace_and_the_level_once_each():
    balance, daily = _current([on(2025, 11, 3, 5), on(2025, 11, 9, 3)], dt.date(2025, 11, 10))
    root = ET.fromstring(burnup_svg(balance.period, balance.available_s, daily, dt.date(2025, 11, 10)))
    strokes = [p.get("style", "") for p in root.iter("{http://www.w3.org/2000/svg}path")]
    for colour, width, dashes in (("#2457c5", "1.8", None), ("#8a94a6", "1.08", "4.32,2.88"),
                                  ("#1e7d3a", "1.08", "2.88,2.16")):
        (style,) = [s for s in strokes if f"stroke: {colour}" in s]
        assert f"stroke-width: {width};" in style + ";"
        assert (f"stroke-dasharray: {dashes};" in style) if dashes else "dasharray" not in style
    # The legend is the page's text (templates/pages/public/hours/page.html), not the drawing's.
    texts = {t.text for t in root.iter("{http://www.w3.org/2000/svg}text")}
    assert texts == {"0", "5", "10", "15", "20", "1 Nov", "16 Nov", "1 Dec"}


def test_chart_labels_are_plain_text_even_with_dollar_signs():
    from hourtab.core.svgchart import line_svg

    svg = line_svg([0, 1, 2], [1.0, 3.0, 2.0], title="loss $x$ < $5", title_id="s", )
    assert "<title id=\"s\">loss $x$ &lt; $5</title>" in svg
    ET.fromstring(svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1))


def test_the_phone_drawing_has_the_same_data_and_text_readable_at_its_width():
    """Text in CSS px = font size × shown width / drawn width: each drawing stays ≥ 11 px where it is shown."""
    import re

    from hourtab.retainers.chart import NARROW

    balance, daily = _current([on(2025, 11, 3, 5), on(2025, 11, 9, 3)], dt.date(2025, 11, 10))
    wide, narrow = burnup_svgs(balance.period, balance.available_s, daily, dt.date(2025, 11, 10))
    assert wide == burnup_svg(balance.period, balance.available_s, daily, dt.date(2025, 11, 10))
    ns = "{http://www.w3.org/2000/svg}"
    for svg, layout, narrowest in ((wide, WIDE, 640 - 2 * 16 - 2 * 20 - 2), (narrow, NARROW, 360 - 2 * 8 - 2 * 12 - 2)):
        root = ET.fromstring(svg)
        box_width = float(root.get("viewBox").split()[2])      # in points: 0.72 of the CSS px it was laid out in
        assert round(box_width / 0.72) == layout.width
        sizes = {float(m) for m in re.findall(r"font-size: ([\d.]+)px", svg)}
        assert len(sizes) == 1
        # Shown in its narrowest box (a 40rem screen for the wide one, a 360 px phone for the other).
        assert min(sizes) * narrowest / box_width >= 11
        assert {t.text for t in root.iter(f"{ns}text")} >= {"1 Nov", "16 Nov", "1 Dec", "20"}
    assert 'class="burnup narrow"' in narrow and 'id="burnup-title-narrow"' in narrow
    assert ET.fromstring(wide).find(f"{ns}title").text == ET.fromstring(narrow).find(f"{ns}title").text


def test_a_kept_figure_redrawn_with_new_hours_gives_the_bytes_of_a_fresh_one():
    # The page after an import redraws a kept figure with a longer line; a stale line, legend
    # place or layout left from the drawing before would show here as different bytes.
    period = build_ledger(NOV, frame([]), as_of=dt.datetime(2025, 11, 10, 12, tzinfo=dt.UTC)).current.period
    before = {dt.date(2025, 11, d): HOUR for d in (1, 2, 3)}
    after = {**before, dt.date(2025, 11, 9): 2 * HOUR, dt.date(2025, 11, 10): 3 * HOUR}
    chart._FIGURES.clear()
    chart._DRAWN.clear()
    fresh = burnup_svgs(period, 20 * HOUR, after, dt.date(2025, 11, 10), inline=True)
    chart._FIGURES.clear()
    chart._DRAWN.clear()  # drawn again, not the drawing kept from the first call
    burnup_svgs(period, 20 * HOUR, before, dt.date(2025, 11, 10), inline=True)
    redrawn = burnup_svgs(period, 20 * HOUR, after, dt.date(2025, 11, 10), inline=True)
    assert len(chart._FIGURES) == 1  # the second drawing reused the first one's figure
    assert redrawn == fresh
    assert fresh[0] != burnup_svgs(period, 20 * HOUR, before, dt.date(2025, 11, 10), inline=True)[0]


def test_the_line_drawn_alone_into_the_kept_drawing_gives_the_bytes_of_the_whole_figure_drawn():
    # Only the hours used are drawn for a page: the grid, labels, pace and level come from the
    # figure's kept drawing. A line placed, clipped or styled otherwise than savefig would draw it
    # (a matplotlib upgrade changing how an SVG is laid out) shows here.
    from hourtab.core.svgchart import to_svg

    period = build_ledger(NOV, frame([]), as_of=dt.datetime(2025, 11, 10, 12, tzinfo=dt.UTC)).current.period
    daily = {dt.date(2025, 11, d): d * HOUR // 2 for d in (1, 2, 3, 6, 7, 9)}
    for available_s in (20 * HOUR, -5 * HOUR):
        chart._FIGURES.clear()
        chart._DRAWN.clear()
        drawn = burnup_svgs(period, available_s, daily, dt.date(2025, 11, 10), inline=True)
        (kept,) = chart._FIGURES.values()
        for layout, svg in zip((WIDE, chart.NARROW), drawn, strict=True):
            chart._lay_out(kept, layout)
            whole = to_svg(kept.fig, title=ET.fromstring(svg).find("title").text, inline=True,
                           css_class="burnup narrow" if layout is chart.NARROW else "burnup",
                           title_id=f"burnup-title{layout.suffix}")
            assert svg == whole
            assert svg.count("stroke: #2457c5") == 1  # the hours used, drawn once


def test_overdrawn_periods_share_a_figure_and_draw_as_fresh_ones():
    # Debt carried in changes with every late entry of a closed period; it draws no pace and no level.
    period = build_ledger(NOV, frame([]), as_of=dt.datetime(2025, 11, 10, 12, tzinfo=dt.UTC)).current.period
    daily = {dt.date(2025, 11, 2): 2 * HOUR}
    chart._FIGURES.clear()
    chart._DRAWN.clear()
    fresh = burnup_svgs(period, -40 * HOUR, daily, dt.date(2025, 11, 10), inline=True)
    chart._DRAWN.clear()
    burnup_svgs(period, -30 * HOUR, daily, dt.date(2025, 11, 10), inline=True)
    assert len(chart._FIGURES) == 1
    assert burnup_svgs(period, -40 * HOUR, daily, dt.date(2025, 11, 10), inline=True) == fresh
    assert "-40" in fresh[0] and "-40" not in burnup_svgs(period, -30 * HOUR, daily, dt.date(2025, 11, 10))[0]
