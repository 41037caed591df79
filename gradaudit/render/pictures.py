"""A scenario's derivatives as pictures, in data the HTML template draws as inline SVG: a heatmap
of each path's Jacobian (or Hessian), a difference map of each path against the reference path,
and where each output element's value came from and where each path sends its derivative.

Only numbers here, no markup and no JAX: which cells to draw, where, in which colour class, and
what the picture says about itself (its scale, its size, whether it was downsampled). A matrix
larger than `MAX_SIDE` cells a side is pooled by max |x| in windows, NaN and infinities first,
so the worst entries stay visible.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gradaudit.judging.tolerances import tolerances_for
from gradaudit.model.paths import (
    CONSTANT_SUFFIX,
    FAMILIES,
    VALUE,
    PathFamily,
    PathResult,
    base_name,
    label,
    primary_name,
)
from gradaudit.model.results import ScenarioResult

MAX_SIDE = 64
"""Cells a picture has at most along either side: a larger matrix is pooled down to this."""
LEVELS = 8
"""Colour steps on each side of zero."""
TITLED = 256
"""Pictures of at most this many cells (and not pooled) give every cell a tooltip with its value."""
WRAP = 32
"""A one-dimensional output longer than this is laid out in rows of this many elements."""
CASE_COLOURS = 10
"""Distinct colours for the inputs a routing picture names (they repeat past this)."""


@dataclass(frozen=True)
class Cell:
    """A run of `w` cells of one colour class from column `x` of row `y` (a single cell when w is 1)."""

    x: int
    y: int
    w: int
    cls: str
    title: str = ""
    text: str = ""
    wrong: bool = False


@dataclass(frozen=True)
class Span:
    """A labelled range of drawn rows or columns: one input's block."""

    label: str
    start: float
    end: float


@dataclass
class Heatmap:
    """One matrix drawn as cells: a path's derivatives, or its difference from the reference."""

    kind: str
    """`jacobian`, `hessian` or `difference`."""
    paths: tuple[str, ...]
    """The paths whose arrays this draws (paths with equal numbers share one picture)."""
    title: str
    rows: int
    cols: int
    entries: tuple[int, int]
    """Rows and columns of the matrix before any pooling."""
    window: tuple[int, int] | None
    """The pooling window (rows, columns) when downsampled, else None."""
    cells: list[Cell]
    col_spans: list[Span]
    row_spans: list[Span]
    scale: float
    """The |value| that takes the strongest colour."""
    captions: list[str]
    reference: str | None = None
    """For a difference map: the path it is taken against."""
    nonfinite: dict[str, int] = field(default_factory=dict)

    @property
    def path_attr(self) -> str:
        return " ".join(self.paths)

    @property
    def downsampled(self) -> bool:
        return self.window is not None

    @property
    def nonfinite_text(self) -> str:
        return ", ".join(f"{count} {name}" for name, count in self.nonfinite.items())


@dataclass
class RoutingPanel:
    label: str
    paths: tuple[str, ...]
    cells: list[Cell]


@dataclass
class Routing:
    """Per output element: which input supplied its value (finite differences) and where each AD path sends its
    derivative."""

    rows: int
    cols: int
    elements: int
    window: tuple[int, int] | None
    panels: list[RoutingPanel]
    legend: list[tuple[str, str]]
    captions: list[str]

    @property
    def downsampled(self) -> bool:
        return self.window is not None


@dataclass
class FamilyPictures:
    """A family's pictures (first order: Jacobians; second order: Hessians)."""

    order: int
    heading: str
    heatmaps: list[Heatmap]
    differences: list[Heatmap]
    agreeing: list[str]
    """Labels of paths equal to the reference to tolerance (no difference map drawn)."""
    failed: list[tuple[str, str]]
    """(path label, why) for paths with no arrays: the exception raised, or why it does not apply."""

    @property
    def cells(self) -> int:
        return sum(len(h.cells) for h in (*self.heatmaps, *self.differences))


# --- matrices ---------------------------------------------------------------------------------


def _output_shape(result: ScenarioResult) -> tuple[int, ...] | None:
    if result.provenance is not None:
        return tuple(result.provenance.output_shape)
    for name, path in result.paths.items():
        if base_name(name) == VALUE and path.ok:
            return tuple(np.shape(path.ok_arrays[0]))
    return None


def _index(shape: Sequence[int], flat: int) -> str:
    if not shape:
        return ""
    return "[" + ", ".join(str(int(i)) for i in np.unravel_index(flat, tuple(shape))) + "]"


@dataclass(frozen=True)
class _Layout:
    """How a path's blocks form one matrix: row groups and column groups, and what an entry is called."""

    row_groups: list[tuple[str, int]]
    col_groups: list[tuple[str, int]]
    order: int
    output_shape: tuple[int, ...]
    input_shapes: tuple[tuple[int, ...], ...]
    arg_names: tuple[str, ...]

    @property
    def shape(self) -> tuple[int, int]:
        return sum(n for _, n in self.row_groups), sum(n for _, n in self.col_groups)

    def entry(self, row: int, col: int) -> str:
        """An entry named as findings name it: `d out[0]/d case 1[2]`, or `d2 out/d x0[1] d x1[0]`."""
        col_arg, col_flat = _locate(self.col_groups, col)
        if self.order == 1:
            return (
                f"d out{_index(self.output_shape, row)}/d "
                f"{self.arg_names[col_arg]}{_index(self.input_shapes[col_arg], col_flat)}"
            )
        row_arg, row_flat = _locate(self.row_groups, row)
        out_flat, first_flat = divmod(row_flat, max(1, math.prod(self.input_shapes[row_arg])))
        first = f"{self.arg_names[row_arg]}{_index(self.input_shapes[row_arg], first_flat)}"
        second = f"{self.arg_names[col_arg]}{_index(self.input_shapes[col_arg], col_flat)}"
        return f"d2 out{_index(self.output_shape, out_flat)}/d {first} d {second}"


def _locate(groups: Sequence[tuple[str, int]], position: int) -> tuple[int, int]:
    for number, (_, size) in enumerate(groups):
        if position < size:
            return number, position
        position -= size
    return len(groups) - 1, position


def _layout(result: ScenarioResult, order: int) -> _Layout | None:
    output_shape = _output_shape(result)
    if output_shape is None:
        return None
    out_size = math.prod(output_shape)
    shapes = tuple(tuple(np.shape(a)) for a in result.inputs)
    if len(shapes) != len(result.arg_names):
        return None
    sizes = [math.prod(s) for s in shapes]
    if order == 1:
        return _Layout(
            [("output", out_size)],
            list(zip(result.arg_names, sizes, strict=True)),
            1,
            output_shape,
            shapes,
            result.arg_names,
        )
    return _Layout(
        [(name, out_size * size) for name, size in zip(result.arg_names, sizes, strict=True)],
        list(zip(result.arg_names, sizes, strict=True)),
        2,
        output_shape,
        shapes,
        result.arg_names,
    )


def _matrix(path: PathResult, layout: _Layout) -> np.ndarray | None:
    """The path's blocks as one float64 matrix laid out as `layout` says; None when they do not fit it."""
    return _laid_out(path.ok_arrays, layout)  # family_pictures passes only ok paths


def _laid_out(arrays: Sequence, layout: _Layout) -> np.ndarray | None:
    """Blocks (a path's, or the judge's masks) as one float64 matrix laid out as `layout` says; None
    when they do not fit it."""
    rows, cols = layout.shape
    try:
        blocks = [np.asarray(a, dtype=np.float64) for a in arrays]
        if layout.order == 1:
            parts = [b.reshape(rows, size) for b, (_, size) in zip(blocks, layout.col_groups, strict=True)]
            return np.hstack(parts) if parts else np.zeros((rows, 0))
        n = len(layout.col_groups)
        if len(blocks) != n * n:
            return None
        bands = []
        for i, (_, height) in enumerate(layout.row_groups):
            bands.append(
                np.hstack([blocks[i * n + j].reshape(height, size) for j, (_, size) in enumerate(layout.col_groups)])
            )
        return np.vstack(bands) if bands else np.zeros((0, cols))
    except (ValueError, TypeError):
        return None


def _pool(
    values: np.ndarray, key: np.ndarray, side: int = MAX_SIDE
) -> tuple[np.ndarray, np.ndarray, tuple[int, int] | None]:
    """Downsample to at most `side` × `side` cells, each window shown by its entry of largest `key`;
    (values, the chosen entries' flat indices in the original, the window or None)."""
    rows, cols = values.shape
    index = np.arange(values.size).reshape(values.shape)
    if rows <= side and cols <= side:
        return values, index, None
    wr, wc = max(1, math.ceil(rows / side)), max(1, math.ceil(cols / side))
    pr, pc = math.ceil(rows / wr) * wr, math.ceil(cols / wc) * wc
    padded_key = np.full((pr, pc), -1.0)
    padded_key[:rows, :cols] = key
    padded_index = np.zeros((pr, pc), dtype=np.int64)
    padded_index[:rows, :cols] = index
    nr, nc = pr // wr, pc // wc
    windows_key = padded_key.reshape(nr, wr, nc, wc).transpose(0, 2, 1, 3).reshape(nr, nc, wr * wc)
    windows_index = padded_index.reshape(nr, wr, nc, wc).transpose(0, 2, 1, 3).reshape(nr, nc, wr * wc)
    chosen = np.take_along_axis(windows_index, np.argmax(windows_key, axis=2)[..., None], axis=2)[..., 0]
    return values.reshape(-1)[chosen], chosen, (wr, wc)


def _magnitude_key(values: np.ndarray) -> np.ndarray:
    """What pooling keeps first: NaN, then infinities, then the largest |x|."""
    finite = np.isfinite(values)
    top = float(np.max(np.abs(values[finite]))) if finite.any() else 1.0
    key = np.abs(np.where(finite, values, 0.0)) / (top or 1.0)
    return np.where(np.isnan(values), 3.0, np.where(np.isinf(values), 2.0, key))


def _classes(values: np.ndarray, scale: float) -> np.ndarray:
    """Colour classes: z (zero), p1..p8 / n1..n8 (positive / negative, by |x| / scale), nan, pinf, ninf."""
    out = np.full(values.shape, "z", dtype=object)
    finite = np.isfinite(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        level = np.clip(np.ceil(LEVELS * np.abs(np.where(finite, values, 0.0)) / (scale or 1.0)), 1, LEVELS).astype(int)
    for sign, prefix in ((values > 0, "p"), (values < 0, "n")):
        chosen = finite & sign
        if chosen.any():
            out[chosen] = [f"{prefix}{step}" for step in level[chosen]]
    out[np.isnan(values)] = "nan"
    out[values == np.inf] = "pinf"
    out[values == -np.inf] = "ninf"
    return out


def _cells(classes: np.ndarray, titles: np.ndarray | None, background: str = "z") -> list[Cell]:
    """Cells to draw: every cell with its tooltip when titled, else runs of one class with the
    background class left to the background."""
    cells = []
    rows, cols = classes.shape
    for y in range(rows):
        row = classes[y]
        x = 0
        while x < cols:
            cls = row[x]
            if titles is not None:
                cells.append(Cell(x, y, 1, cls, titles[y, x]))
                x += 1
                continue
            end = x + 1
            while end < cols and row[end] == cls:
                end += 1
            if cls != background:
                cells.append(Cell(x, y, end - x, cls))
            x = end
    return cells


def _spans(groups: Sequence[tuple[str, int]], window: int) -> list[Span]:
    spans, start = [], 0
    for name, size in groups:
        spans.append(Span(name, start / window, (start + size) / window))
        start += size
    return spans


def _format(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.6g}"


def _heatmap(
    kind: str,
    paths: tuple[str, ...],
    title: str,
    shown: np.ndarray,
    key: np.ndarray,
    layout: _Layout,
    scale: float | None = None,
    reference: str | None = None,
    describe=None,
    excluded: np.ndarray | None = None,
) -> Heatmap:
    rows, cols = shown.shape
    pooled, chosen, window = _pool(shown, key)
    if scale is None:
        everywhere = shown[np.isfinite(shown)]
        scale = float(np.max(np.abs(everywhere))) if everywhere.size else 0.0
    classes = _classes(pooled, scale)
    if excluded is not None:
        left_out = excluded.reshape(-1)[chosen]
        classes[left_out & (classes == "z")] = "skip"
    titled = window is None and pooled.size <= TITLED
    titles = None
    if titled:
        titles = np.empty(pooled.shape, dtype=object)
        for (y, x), flat in np.ndenumerate(chosen):
            r, c = divmod(int(flat), cols)
            titles[y, x] = f"{layout.entry(r, c)} = {describe(r, c) if describe else _format(float(shown[r, c]))}"
    nonfinite = {
        name: int(count)
        for name, count in (
            ("NaN", np.isnan(shown).sum()),
            ("+inf", (shown == np.inf).sum()),
            ("-inf", (shown == -np.inf).sum()),
        )
        if count
    }
    captions = [
        f"{rows}×{cols} entries" + (f", colour scale ±{scale:.3g}" if scale else "" if nonfinite else ", all zero")
    ]
    if window is not None:
        kept = "the entry furthest past its tolerance" if kind == "difference" else "the largest |x|"
        captions.append(
            f"downsampled to {pooled.shape[0]}×{pooled.shape[1]} cells: each shows {kept} of its "
            f"{window[0]}×{window[1]} window (NaN and inf first)"
        )
    if nonfinite:
        captions.append(
            ", ".join(f"{count} {name}" for name, count in nonfinite.items()) + " (drawn in their own colours)"
        )
    wr, wc = window or (1, 1)
    return Heatmap(
        kind=kind,
        paths=paths,
        title=title,
        rows=pooled.shape[0],
        cols=pooled.shape[1],
        entries=(rows, cols),
        window=window,
        cells=_cells(classes, titles),
        col_spans=_spans(layout.col_groups, wc),
        row_spans=_spans(layout.row_groups, wr) if layout.order == 2 else [],
        scale=scale,
        captions=captions,
        reference=reference,
        nonfinite=nonfinite,
    )


def _bindings(result: ScenarioResult) -> tuple[str, ...]:
    return ("", "constant") if any(primary_name(name).endswith(CONSTANT_SUFFIX) for name in result.paths) else ("",)


def _family_paths(result: ScenarioResult, family: PathFamily) -> tuple[list[str], list[str]]:
    """The family's AD paths and references present in the result, further devices included, in order."""
    ad, refs = family.bound(_bindings(result))
    present = list(result.paths)

    def named(bases: Sequence[str]) -> list[str]:
        return [name for base in bases for name in present if primary_name(name) == base]

    return named(ad), named(refs)


def _difference(path: np.ndarray, reference: np.ndarray, rtol: float, atol: float) -> tuple[np.ndarray, np.ndarray]:
    """(what a difference map shows, how bad each entry is): path − reference where it is beyond
    atol + rtol·|reference|, 0 within; NaN where one side is NaN (or infinities differ), ±inf
    where only the path is infinite; badness in multiples of the tolerance (inf where not finite)."""
    with np.errstate(invalid="ignore", over="ignore"):
        both_nan = np.isnan(path) & np.isnan(reference)
        same_inf = np.isinf(path) & (path == reference)
        agree = both_nan | same_inf
        delta = path - reference
        allowed = atol + rtol * np.abs(np.where(np.isfinite(reference), reference, 0.0))
        badness = np.where(
            np.isfinite(delta),
            np.abs(np.where(np.isfinite(delta), delta, 0.0)) / np.where(allowed > 0, allowed, 1e-300),
            np.inf,
        )
        badness = np.where(agree, 0.0, badness)
        shown = np.where(badness <= 1.0, 0.0, delta)
        shown = np.where(~agree & np.isinf(path) & np.isfinite(reference), path, shown)
        shown = np.where(~agree & ~np.isfinite(delta) & ~(np.isinf(path) & np.isfinite(reference)), np.nan, shown)
    return shown, badness


def family_pictures(result: ScenarioResult, family: PathFamily) -> FamilyPictures | None:
    """Heatmaps of the family's paths (equal arrays drawn once) and difference maps against the
    reference the judge uses: finite differences where they ran, else the first AD path."""
    ad, refs = _family_paths(result, family)
    names = [*refs, *ad]
    if not names:
        return None
    layout = _layout(result, family.order)
    kind = "jacobian" if family.order == 1 else "hessian"
    heading = "Jacobians" if family.order == 1 else "Hessians (second order)"
    failed = []
    matrices: dict[str, np.ndarray] = {}
    for name in names:
        path = result.paths[name]
        if not path.ok:
            if path.not_applicable:
                failed.append((label(name), f"does not apply: {path.not_applicable}"))
            else:
                assert path.error is not None, "exactly one of arrays, error and not_applicable is set (PathResult)"
                failed.append((label(name), f"raised {path.error.located()}"))
            continue
        matrix = _matrix(path, layout) if layout is not None else None
        if matrix is None:
            failed.append((label(name), "arrays of an unexpected shape: not drawn"))
            continue
        matrices[name] = matrix
    if not matrices:
        return FamilyPictures(family.order, heading, [], [], [], failed)
    if not next(iter(matrices.values())).size:
        return FamilyPictures(
            family.order,
            heading,
            [],
            [],
            [],
            [*failed, ("every path", "no entries to draw: the output or every input is empty")],
        )
    assert layout is not None, "without a layout no path has a matrix: returned above"
    groups: list[tuple[list[str], np.ndarray]] = []
    for name, matrix in matrices.items():
        for members, seen in groups:
            if seen.shape == matrix.shape and np.array_equal(seen, matrix, equal_nan=True):
                members.append(name)
                break
        else:
            groups.append(([name], matrix))
    everything = np.concatenate([m.reshape(-1) for _, m in groups])
    finite = everything[np.isfinite(everything)]
    scale = float(np.max(np.abs(finite))) if finite.size else 0.0
    heatmaps = [
        _heatmap(
            kind, tuple(members), " = ".join(label(n) for n in members), matrix, _magnitude_key(matrix), layout, scale
        )
        for members, matrix in groups
    ]
    if family.order == 2:
        for heatmap in heatmaps:
            heatmap.captions.append(
                "rows: (output element, first input's element); columns: the second input's elements"
            )
    reference, ref_matrix, rtol, atol, excluded, refined = _judged_reference(result, family, refs, matrices, layout)
    differences, agreeing = [], []
    for members, matrix in groups:
        if reference in members:
            continue
        shown, badness = _difference(matrix, ref_matrix, rtol, atol)
        if excluded is not None:
            shown, badness = np.where(excluded, 0.0, shown), np.where(excluded, 0.0, badness)
        title = f"{' = '.join(label(n) for n in members)} − {label(reference)}{' (refined)' if refined else ''}"
        if not (badness > 1.0).any():
            agreeing.append(" = ".join(label(n) for n in members))
            continue

        def describe(r: int, c: int, matrix=matrix, shown=shown) -> str:
            said = f"{_format(float(matrix[r, c]))} vs {_format(float(ref_matrix[r, c]))}"
            if excluded is not None and excluded[r, c]:
                return said + " (not compared: finite differences cannot judge this entry)"
            return said + ("" if shown[r, c] != 0 else " (within tolerance)")

        diff = _heatmap(
            "difference", tuple(members), title, shown, badness, layout, None, reference, describe, excluded
        )
        diff.captions.insert(1, f"white: within tolerance (|Δ| ≤ {atol:.2g} + {rtol:.2g}·|{label(reference)}|)")
        if excluded is not None and excluded.any():
            diff.captions.insert(
                2, f"grey: {int(excluded.sum())} entries the judge did not compare (a kink, no finite estimate)"
            )
        differences.append(diff)
    return FamilyPictures(family.order, heading, heatmaps, differences, agreeing, failed)


def _judged_reference(
    result: ScenarioResult, family: PathFamily, refs: list[str], matrices: dict[str, np.ndarray], layout: _Layout
) -> tuple[str, np.ndarray, float, float, np.ndarray | None, bool]:
    """What the difference maps compare with, as the judge compared (`ScenarioResult.compared`): the
    reference's name and matrix, the tolerance, the entries left out (None: none recorded) and
    whether the reference was refined (its numbers are not the path's own). A result read back
    from a report has no record: its scenario's tolerance and its first reference, every entry."""
    judged = next((c for c in result.compared if c.order == family.order), None)
    if judged is not None and judged.reference is not None:
        name = primary_name(judged.reference.name)
        name = next((n for n in refs if primary_name(n) == name), judged.reference.name)
        own = matrices.get(name)
        matrix = _matrix(judged.reference, layout)
        if matrix is not None:
            refined = own is None or not np.array_equal(own, matrix, equal_nan=True)
            excluded = _laid_out(judged.excluded, layout) if judged.excluded else None
            return name, matrix, judged.rtol, judged.atol, None if excluded is None else excluded > 0, refined
    reference = next((n for n in refs if n in matrices), None)
    if judged is not None:
        rtol, atol = judged.rtol, judged.atol
    else:
        tolerances = tolerances_for(result.scenario, paths=result.paths)
        rtol, atol = (
            (tolerances.fd_rtol, tolerances.fd_atol)
            if reference is not None
            else (tolerances.ad_rtol, tolerances.ad_atol)
        )
    reference = reference or next(iter(matrices))
    return reference, matrices[reference], rtol, atol, None, False


def scenario_pictures(result: ScenarioResult) -> list[FamilyPictures]:
    """Jacobians, then (order 2) Hessians."""
    pictures = []
    for family in FAMILIES:
        if family.order > result.scenario.order:
            continue
        drawn = family_pictures(result, family)
        if drawn is not None:
            pictures.append(drawn)
    return pictures


# --- routing ----------------------------------------------------------------------------------


def _grid(shape: tuple[int, ...]) -> tuple[int, int]:
    """Rows and columns an output of this shape is laid out in: as numpy prints it, a long vector wrapped."""
    if not shape:
        return 1, 1
    if len(shape) == 1:
        n = shape[0]
        return (1, n) if n <= WRAP else (math.ceil(n / WRAP), WRAP)
    return math.prod(shape[:-1]), shape[-1]


def _source_cell(sources: tuple[int, ...]) -> tuple[str, str]:
    if not sources:
        return "none", "·"
    if len(sources) == 1:
        return f"c{sources[0] % CASE_COLOURS}", str(sources[0])
    return "many", "|".join(map(str, sources))


def _runs(cells: list[Cell]) -> list[Cell]:
    """Neighbours in a row alike (class, outline, no tooltip or text) drawn as one wider cell."""
    merged: list[Cell] = []
    for cell in cells:
        last = merged[-1] if merged else None
        if (
            last is not None
            and not (cell.title or cell.text or last.title or last.text)
            and (last.y, last.x + last.w, last.cls, last.wrong) == (cell.y, cell.x, cell.cls, cell.wrong)
        ):
            merged[-1] = Cell(last.x, last.y, last.w + 1, last.cls, wrong=last.wrong)
        else:
            merged.append(cell)
    return merged


def routing(result: ScenarioResult) -> Routing | None:
    """The routing picture: a panel for where values come from (read off finite differences) and
    one per AD path (paths routing alike share one), each output element a cell naming its input;
    a cell whose path routes elsewhere than the value came from is outlined."""
    prov = result.provenance
    if prov is None or not prov.value_from:
        return None
    names = result.arg_names
    shape = tuple(prov.output_shape)
    size = len(prov.value_from)
    rows, cols = _grid(shape)
    judged = bool(result.compared)  # a result read back from a report has no record of the judge's

    def blamed(paths: Sequence[str], element: int, routes: tuple) -> bool:
        """Whether the judge's routing finding names this element for these paths (without its
        record: whether they route it elsewhere than the value came from)."""
        if routes[element] == prov.value_from[element]:
            return False
        return not judged or any(element in result.misrouted.get(path, ()) for path in paths)

    wrong = np.zeros(rows * cols, dtype=float)
    for element in range(size):
        if any(blamed((path,), element, routes) for path, routes in prov.routes.items()):
            wrong[element] = 1.0
    position = np.arange(rows * cols).reshape(rows, cols)
    present = (position < size).astype(float)
    _, chosen, window = _pool(position.astype(float), wrong.reshape(rows, cols) * 2 + present)
    panels_from: list[tuple[str, tuple[str, ...], tuple]] = [
        ("value from (finite differences)", ("value_from",), prov.value_from)
    ]
    for path, routes in prov.routes.items():
        for number, (panel_label, members, seen) in enumerate(panels_from[1:], 1):
            if seen == routes:
                panels_from[number] = (f"{panel_label} = {label(path)}", (*members, path), seen)
                break
        else:
            panels_from.append((label(path), (path,), routes))
    titled = window is None and size <= TITLED
    panels = []
    for number, (panel_label, members, routes) in enumerate(panels_from):
        cells = []
        for (y, x), element in np.ndenumerate(chosen):
            element = int(element)
            if element >= size:
                continue
            cls, text = _source_cell(routes[element])
            is_wrong = number > 0 and blamed(members, element, routes)
            title = ""
            if titled:
                said = ", ".join(names[i] for i in routes[element]) or "nowhere"
                title = f"out{_index(shape, element)}: " + (
                    f"value from {said}" if number == 0 else f"{panel_label} sends the derivative to {said}"
                )
            cells.append(Cell(x, y, 1, cls, title, text if titled or (rows <= 16 and cols <= 16) else "", is_wrong))
        panels.append(RoutingPanel(panel_label, members, _runs(cells)))
    used = sorted(
        {i for sources in prov.value_from for i in sources}
        | {i for routes in prov.routes.values() for sources in routes for i in sources}
    )
    legend = [(f"c{i % CASE_COLOURS}", f"{i}: {names[i]}") for i in used[:12]]
    if len(used) > 12:
        legend.append(("many", f"and {len(used) - 12} more inputs"))
    legend += [("none", "· nowhere"), ("many", "several inputs")]
    captions = [
        f"output shape ({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''}): {size} "
        f"element{'s' if size != 1 else ''}; outlined: routed elsewhere than the value came from"
        + (" where the path's derivative is also wrong (the routing finding's elements)" if judged else "")
    ]
    if window is not None:
        captions.append(
            f"downsampled to {chosen.shape[0]}×{chosen.shape[1]} cells: each shows one element of its "
            f"{window[0]}×{window[1]} window, a wrongly routed one where there is one"
        )
    return Routing(chosen.shape[0], chosen.shape[1], size, window, panels, legend, captions)


def path_label(name: str) -> str:
    """How the page names a path (`value_from` is the routing's first panel)."""
    return "value from" if name == "value_from" else label(name)
