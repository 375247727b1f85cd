"""Charts through matplotlib: length histograms and curves with interval bands.

PNG for the card and the screen, PDF and SVG for papers, chosen by a file's
suffix. matplotlib is the optional extra ``plot`` (the pipeline needs it, the
runtime does not), so it is imported only when a chart is drawn. Every chart
is drawn with matplotlib's own defaults and its bundled DejaVu Sans, whatever
the user's matplotlibrc says, on the Agg canvas, and saved without the dates,
versions and random IDs matplotlib would embed: the same inputs give the same
bytes in any process, which the committed PNGs rely on.
"""

from __future__ import annotations

import importlib
import io
import math
from pathlib import Path

from ..extras import install_advice

FORMATS = ("png", "pdf", "svg")
PLOT_EXTRA = install_advice("plot")
# What each format would otherwise embed that changes between runs or versions.
METADATA = {
    "png": {"Software": None},
    "pdf": {"CreationDate": None, "Creator": None, "Producer": None},
    "svg": {"Date": None, "Creator": None},
}
STYLE = {
    "font.family": "DejaVu Sans",  # bundled with matplotlib, so the glyphs are the same everywhere
    "font.size": 10,
    "svg.hashsalt": "sokoban-fairness",  # SVG element IDs are hashes, salted by default with a random UUID
    "svg.fonttype": "path",
    "pdf.fonttype": 42,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
SIZE = (8.0, 3.6)  # inches, at DPI: 800 by 360 pixels
DPI = 100


class PlotUnavailable(RuntimeError):
    """A chart was asked for, but matplotlib (the ``plot`` extra) is not installed."""


def chart_format(path: Path | str) -> str:
    """The format a chart written to ``path`` takes from its suffix; ValueError for any other suffix."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise ValueError(f"{path}: a chart is written as {', '.join('.' + f for f in FORMATS)}; "
                         f"give the file one of these suffixes")
    return suffix


def require_matplotlib(purpose: str = "drawing a chart") -> None:
    """Refuse in one line, naming the extra, when matplotlib is missing; call it before the work."""
    try:
        importlib.import_module("matplotlib")
    except ImportError:
        raise PlotUnavailable(f"{purpose} needs matplotlib, which is not installed: {PLOT_EXTRA}") from None


def _draw(paint, fmt: str) -> bytes:
    """``paint(axes)`` on a fresh figure in the fixed style; the figure's bytes in ``fmt``."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown chart format {fmt!r}; one of {', '.join(FORMATS)}")
    require_matplotlib()
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context():
        matplotlib.rcdefaults()  # the library's defaults, not the user's matplotlibrc
        matplotlib.rcParams.update(STYLE)
        figure = Figure(figsize=SIZE, dpi=DPI)
        FigureCanvasAgg(figure)
        axes = figure.add_subplot()
        paint(axes)
        axes.grid(axis="y", color="0.9")
        axes.set_axisbelow(True)
        figure.tight_layout()
        out = io.BytesIO()
        figure.savefig(out, format=fmt, dpi=DPI, metadata=METADATA[fmt])
    return out.getvalue()


def length_histogram(series: dict[str, dict[str, int]], fmt: str = "png") -> bytes:
    """Grouped bars of the share of boards per shortest-solution length.

    ``series`` maps a legend label to a histogram (length as a string -> boards);
    bars show shares, so splits of different sizes compare directly.
    """
    lengths = sorted({int(k) for hist in series.values() for k in hist})
    width = 0.8 / len(series)

    def paint(axes):
        for j, (label, hist) in enumerate(series.items()):
            total = sum(hist.values())
            offsets = [n - 0.4 + width * (j + 0.5) for n in lengths]
            axes.bar(offsets, [hist.get(str(n), 0) / total for n in lengths], width=width, label=label)
        axes.set_xticks(lengths)
        axes.set_xlabel("shortest solution length (player actions)")
        axes.set_ylabel("share of the split's boards")
        _percent_axis(axes)
        axes.legend(frameon=False)

    return _draw(paint, fmt)


def _percent_axis(axes) -> None:
    """Label the y axis of shares (0 to 1) in whole percent."""
    from matplotlib.ticker import PercentFormatter

    axes.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))


REFERENCE_STYLES = ({"color": "0.45", "linestyle": ":"}, {"color": "0.45", "linestyle": "--"},
                    {"color": "0.7", "linestyle": "-."})


def short_count(x: float) -> str:
    """A tick label: 15, 100k, 1.5M (matplotlib would write a million steps as 1.0 under "1e6")."""
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:g}{suffix}"
    return f"{x:g}"


def line_chart(series: dict[str, list[tuple[float, float, float, float]]], x_label: str, y_label: str,
               title: str = "", log_y: bool = False, fmt: str = "png",
               references: dict[str, float] | None = None, mark_points: bool = True) -> bytes:
    """One line per series with a shaded band, e.g. a mean and its interval.

    ``series`` maps a legend label to points ``(x, y, band_low, band_high)``;
    the y axis shows percentages from 0 to 1, or with ``log_y`` a log scale
    down to the power of ten below the smallest positive value (zeros sit on
    the bottom edge). ``references`` maps a legend label to a level drawn as a
    grey horizontal line across the chart (an exact floor or ceiling, say). With ``mark_points`` the
    x axis has a tick at every point (the series share their x values); otherwise matplotlib's own ticks,
    labelled as those are.
    """
    references = references or {}
    values = [v for points in series.values() for p in points for v in p[1:]]
    positive = [v for v in values if v > 0]
    floor = 10.0 ** math.floor(math.log10(min(positive))) if log_y and positive else 0.0

    def paint(axes):
        for label, points in series.items():
            xs = [p[0] for p in points]
            clip = [[max(v, floor) for v in p[1:]] for p in points]
            line, = axes.plot(xs, [c[0] for c in clip], marker="o", markersize=4, label=label)
            axes.fill_between(xs, [c[1] for c in clip], [c[2] for c in clip], color=line.get_color(),
                              alpha=0.2, linewidth=0)
        for (label, level), style in zip(references.items(), REFERENCE_STYLES):
            axes.axhline(max(level, floor), linewidth=1, label=label, **style)
        if mark_points:
            xs = sorted({p[0] for points in series.values() for p in points})
            axes.set_xticks(xs, [short_count(x) for x in xs])
        else:
            axes.xaxis.set_major_formatter(lambda x, _: short_count(x))
        if log_y:
            axes.set_yscale("log")
            axes.set_ylim(floor, 1.0)
        else:
            axes.set_ylim(0.0, 1.0)
            _percent_axis(axes)
        axes.set_xlabel(x_label)
        axes.set_ylabel(y_label)
        if title:
            axes.set_title(title, fontsize=10)
        axes.legend(frameon=False)

    return _draw(paint, fmt)


def interval_chart(rows: list[str], series: dict[str, list[tuple[float, float, float]]], x_label: str,
                   title: str = "", references: dict[str, list[float]] | None = None, fmt: str = "png") -> bytes:
    """A forest plot: for each of ``rows`` (top to bottom), each series' value as a dot with its
    interval as a horizontal bar, the series offset within the row.

    ``series`` maps a legend label to one ``(value, low, high)`` per row; the x axis shows
    percentages from 0 to 1. ``references`` maps a legend label to one level per row, drawn
    as a grey tick across the row (a floor, say); a level of 1 in every row is drawn as one
    vertical line instead (the ceiling).
    """
    references = references or {}
    spread = 0.5 / max(1, len(series))

    def paint(axes):
        for j, (label, points) in enumerate(series.items()):
            ys = [i + (j - (len(series) - 1) / 2) * spread for i in range(len(rows))]
            values = [p[0] for p in points]
            errors = [[p[0] - p[1] for p in points], [p[2] - p[0] for p in points]]
            axes.errorbar(values, ys, xerr=errors, fmt="o", markersize=5, capsize=4, linewidth=1.5, label=label)
        for (label, levels), style in zip(references.items(), REFERENCE_STYLES):
            if all(level == 1 for level in levels):
                axes.axvline(1.0, linewidth=1, label=label, **style)
                continue
            for i, level in enumerate(levels):
                axes.plot([level, level], [i - 0.4, i + 0.4], linewidth=1.5, label=label if i == 0 else None, **style)
        axes.set_yticks(range(len(rows)), rows)
        axes.set_ylim(len(rows) - 0.5, -0.5)  # the first row on top
        axes.set_xlim(-0.02, 1.02)
        from matplotlib.ticker import PercentFormatter

        axes.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        axes.grid(axis="x", color="0.9")
        axes.set_xlabel(x_label)
        if title:
            axes.set_title(title, fontsize=10)
        axes.legend(frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))

    return _draw(paint, fmt)
