"""The period's burn-up chart as a small hand-built SVG: no script, no fonts to fetch, no library.

Hand-built because the chart is a step line and two straight lines: matplotlib would take ~100 ms
to draw what string formatting does in well under one, and its SVG embeds glyph paths that make
the page heavier. Every text node is escaped even though only dates and numbers reach it.
"""

from __future__ import annotations

import datetime as dt
from html import escape

from hourtab.retainers.headline import format_hours
from hourtab.retainers.periods import Period, short_date
from hourtab.retainers.terms import HOUR

WIDTH, HEIGHT = 640, 260
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 14, 30


def _nice_step(max_hours: float) -> int:
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000):
        if max_hours / step <= 6:
            return step
    return 2000


def burnup_svg(period: Period, available_s: int, daily_used: dict[dt.date, int], today: dt.date,
               inline: bool = False) -> str:
    """Cumulative hours used per day up to ``today``, the available line and the even-pace line.

    ``inline`` drops the XML namespace, which HTML5 does not need inside a page.
    """
    days = period.days
    # Through today, or through the last entry when a tracker already holds later (planned) entries.
    last = min(max([today, *daily_used]), period.last_day)
    points, total = [], 0
    day = period.start
    while day <= last:
        total += daily_used.get(day, 0)
        points.append(((day - period.start).days + 1, total))
        day += dt.timedelta(days=1)
    top_s = max(available_s, total, HOUR)
    step = _nice_step(top_s / HOUR * 1.08)
    y_max = (-(-top_s // (step * HOUR))) * step * HOUR
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(d: float) -> float:
        return round(LEFT + plot_w * d / days, 1)

    def y(s: float) -> float:
        return round(TOP + plot_h * (1 - s / y_max), 1)

    xmlns = "" if inline else ' xmlns="http://www.w3.org/2000/svg"'
    out = [f'<svg{xmlns} viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
           f'aria-labelledby="burnup-title" class="burnup" preserveAspectRatio="xMidYMid meet">',
           f'<title id="burnup-title">{escape(_title(period, available_s, total))}</title>']
    for h in range(0, y_max // HOUR + 1, step):
        yy = y(h * HOUR)
        out.append(f'<line x1="{LEFT}" y1="{yy}" x2="{WIDTH - RIGHT}" y2="{yy}" stroke="#dde1e7" stroke-width="1"/>'
                   f'<text x="{LEFT - 6}" y="{yy + 4}" text-anchor="end" font-size="11" fill="#5d6778" font-family="DejaVu Sans, sans-serif">{h}</text>')
    for d in sorted({0, days // 2, days}):
        label = short_date(period.start + dt.timedelta(days=d)) if d < days else short_date(period.end)
        anchor = "start" if d == 0 else ("end" if d == days else "middle")
        out.append(f'<text x="{x(d)}" y="{HEIGHT - 10}" text-anchor="{anchor}" font-size="11" fill="#5d6778" font-family="DejaVu Sans, sans-serif">'
                   f'{escape(label)}</text>')
    if available_s > 0:
        out.append(f'<line x1="{x(0)}" y1="{y(available_s)}" x2="{x(days)}" y2="{y(available_s)}" '
                   f'stroke="#1e7d3a" stroke-width="1.5" stroke-dasharray="4 3"/>')
        out.append(f'<line x1="{x(0)}" y1="{y(0)}" x2="{x(days)}" y2="{y(available_s)}" stroke="#8a94a6" stroke-width="1.5" stroke-dasharray="6 4"/>')
    if points:
        path = [f"M{x(0)},{y(0)}"]
        prev = 0
        for d, cum in points:
            path.append(f"L{x(d - 1)},{y(prev)}L{x(d - 1)},{y(cum)}")
            prev = cum
        path.append(f"L{x(points[-1][0])},{y(prev)}")
        out.append(f'<path d="{"".join(path)}" fill="none" stroke="#2457c5" stroke-width="2.5"/>')
    out.append("</svg>")
    return "".join(out)


def _title(period: Period, available_s: int, used_s: int) -> str:
    return (f"Hours used from {short_date(period.start)} to {short_date(period.last_day)}: "
            f"{format_hours(used_s)} of {format_hours(available_s)} h, against an even pace")
