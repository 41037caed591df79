"""The rich terminal report: a table of scenarios, their findings as file:line lines, one summary line."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

from gradaudit.diff import FindingChange, ReportDiff
from gradaudit.judging.diagnoses import BY_ID, Diagnosis
from gradaudit.model.errors import InputError
from gradaudit.model.findings import (
    CLASSES,
    CONSISTENT,
    DISAGREEMENT,
    ERROR,
    INTERRUPTED,
    MISMATCH,
    RAISED,
    ROUTING,
    Finding,
    Sources,
)
from gradaudit.model.found import SearchOutcome
from gradaudit.model.paths import (
    AD_PATHS,
    FAMILIES,
    FINITE_DIFFERENCE,
    JACFWD,
    JACREV,
    JIT_JACFWD,
    PATH_LABELS,
    SHOWN_SCALARS,
    PathResult,
    base_name,
    path_name,
)
from gradaudit.model.results import AuditReport, RuleComparison, ScenarioResult
from gradaudit.model.scenario import FunctionCall, Scenario, SelectN, shape_text

STATUS_STYLES: dict[str, str] = {
    CONSISTENT: "green",
    MISMATCH: "bold red",
    ERROR: "bold magenta",
    INTERRUPTED: "yellow",
}
CLASS_STYLES: dict[str, str] = {
    "wrong": "red",
    "eager-jit": "red",
    "leak": "red",
    "raised": "magenta",
    "crashed": "magenta",
    "timed-out": "magenta",
}
"""The classes the gate fails by default stand out; the others keep the line's own style."""
NOWHERE = "·"
MANY = 30
"""Scenarios to show past which the terminal groups findings by kind, with counts and a few
examples each (as pytest's short summary and ruff's --statistics do), and shows only the first
`ROWS` table rows; -v shows everything."""
ROWS = 20
EXAMPLES = 3
"""Example scenarios named per kind, and per diagnosis, when grouped."""


def _grid(shape: tuple[int, ...], cells: Sequence[str]) -> str:
    """Cells laid out like numpy prints arrays: `[a b c]`, `[[a b] [c d]]`."""
    if not shape:
        return cells[0]
    step = int(np.prod(shape[1:], dtype=np.int64))
    parts = [_grid(shape[1:], cells[i * step : (i + 1) * step]) for i in range(shape[0])]
    return "[" + " ".join(parts) + "]"


def _routes_cell(shape: tuple[int, ...], routes: Sequence[Sources]) -> str:
    """Per output element, the case(s) it is routed to; a scalar reads 'case 1' or 'nowhere'."""
    if not shape:
        return "case " + "|".join(str(i) for i in routes[0]) if routes[0] else "nowhere"
    return _grid(shape, ["|".join(str(i) for i in r) if r else NOWHERE for r in routes])


def _number(value: float) -> str:
    return f"{value:g}"


def _selector_cell(result: ScenarioResult) -> str:
    spec = result.scenario.target
    assert isinstance(spec, SelectN), "only select_n tables have a selector column"
    selector = spec.selector
    value = selector.array()
    if selector.dtype == "bool":
        # Arrays of booleans stay readable as T/F; a scalar is spelt out as in YAML.
        words = ("T", "F") if value.ndim else ("true", "false")
        cells = [words[0] if v else words[1] for v in value.reshape(-1)]
    else:
        cells = [str(v) for v in value.reshape(-1)]
    return f"{selector.dtype} {_grid(value.shape, cells)}"


def _path_cell(result: ScenarioResult, name: str) -> Text:
    """A first-order path: its gradient tuple (scalar output, scalar cases, few cases) or its routing."""
    path: PathResult | None = result.paths.get(name)
    if path is None:  # the scenario never got this far (timed out, interrupted)
        return Text("—", style="dim")
    involved = any(name in finding.paths for finding in result.findings)
    style = "red" if involved else ""
    if not path.ok:
        assert path.error is not None, (
            "every path applies to select_n (this table's only kind): one that is not ok raised"
        )
        return Text(path.error.type, style="magenta")
    if path.scalars is not None:
        numbers = [_number(value) for value in path.scalars]
        return Text("(" + ", ".join(numbers) + ("," if len(numbers) == 1 else "") + ")", style=style)
    prov = result.provenance
    if prov is None:
        return Text("ok", style=style)
    routes = prov.value_from if name == FINITE_DIFFERENCE else prov.routes[name]
    return Text(_routes_cell(prov.output_shape, routes), style=style)


def _second_order_cell(result: ScenarioResult) -> Text:
    """For order 2: the reference Hessian's diagonal (small scalar cases) and how many Hessian paths disagree."""
    if result.scenario.order < 2:
        return Text("")
    family = FAMILIES[1]
    if family.reference not in result.paths:
        return Text("—", style="dim")
    reference = result.paths[family.reference]
    text = Text()
    n = len(result.arg_names)
    if (
        reference.ok
        and n <= SHOWN_SCALARS
        and len(reference.ok_arrays) == n * n
        and all(np.size(block) == 1 for block in reference.ok_arrays)
    ):
        diagonal = [_number(float(np.asarray(reference.ok_arrays[i * n + i]).reshape(-1)[0])) for i in range(n)]
        text.append("(" + ", ".join(diagonal) + ("," if n == 1 else "") + ") ")
    # Blame the paths that disagree with the reference (or raised); without a reference, any disagreement.
    blamed = family.reference if reference.ok else None
    wrong = [
        p
        for p in family.ad_paths
        if (result.paths[p].error is not None if p in result.paths else False)
        or any(p in f.paths and (blamed is None or blamed in f.paths) for f in result.findings)
    ]
    if wrong:
        text.append(f"{len(wrong)} differ", style="red")  # the findings lines name them
    else:
        text.append("agree", style="green")
    return text


def _value_cell(result: ScenarioResult) -> str:
    prov = result.provenance
    if prov is None:
        return "?"
    return _routes_cell(prov.output_shape, prov.value_from)


def _shown_paths(results: Sequence[ScenarioResult]) -> list[str]:
    """First-order path columns; jit(jacfwd) only where it says something jacfwd does not, to save width."""
    return [
        name
        for name in (*AD_PATHS, FINITE_DIFFERENCE)
        if name != JIT_JACFWD or any(str(_path_cell(r, JIT_JACFWD)) != str(_path_cell(r, JACFWD)) for r in results)
    ]


Column = tuple[str, dict]
"""A column's header and its rich options."""

SELECT_N_COLUMNS: tuple[Column, ...] = (
    ("scenario", {"overflow": "fold"}),  # no min_width: rich then crops instead of folding
    ("selector", {"overflow": "fold"}),
    ("cases", {"justify": "right", "no_wrap": True}),
    ("shape", {"no_wrap": True}),
    ("value from", {"overflow": "fold"}),
)
FUNCTION_COLUMNS: tuple[Column, ...] = (
    ("scenario", {"overflow": "fold"}),
    ("function", {"overflow": "fold"}),
    ("inputs", {"overflow": "fold"}),
    ("bind", {"no_wrap": True}),
)


def _table(
    results: Sequence[ScenarioResult],
    leading: Sequence[Column],
    leading_cells: Callable[[ScenarioResult], Sequence[str | Text]],
    paths: Sequence[str],
    path_cell: Callable[[ScenarioResult, str], Text],
) -> Table:
    """Leading columns describing the scenario, a column per path, order 2, verdict and diagnosis."""
    table = Table(header_style="bold")
    for header, options in leading:
        table.add_column(header, **options)
    for name in paths:
        table.add_column(PATH_LABELS[name].replace(" ", "\n"), overflow="fold")
    second_order = any(r.scenario.order >= 2 for r in results)
    if second_order:
        table.add_column("order 2\n(fd diagonal)", overflow="fold")
    table.add_column("verdict", no_wrap=True)
    diagnosed = any(r.diagnosis for r in results)
    if diagnosed:
        table.add_column("diagnosis", no_wrap=True)
    for result in results:
        table.add_row(
            *leading_cells(result),
            *(path_cell(result, name) for name in paths),
            *([_second_order_cell(result)] if second_order else []),
            Text(result.status, style=STATUS_STYLES[result.status]),
            *([Text(result.diagnosis.id if result.diagnosis else "", style="bold yellow")] if diagnosed else []),
        )
    return table


NARROW = 120
"""Below this many columns a table of a column per path folds its cells a few characters wide (at 80,
'scenario' reads 'sce/nar/io'): the terminal shows `compact_table` instead."""


def compact_table(results: Sequence[ScenarioResult]) -> Table:
    """A row per scenario for a narrow terminal: what it is, its verdict, the AD paths on the wrong
    side of its findings (`_blamed`; the finding lines below give the numbers) and its diagnosis."""
    table = Table(header_style="bold")
    table.add_column("scenario", overflow="fold", ratio=2)
    table.add_column("verdict", no_wrap=True)
    table.add_column("paths in the wrong", overflow="fold", ratio=3)
    diagnosed = any(r.diagnosis for r in results)
    if diagnosed:
        table.add_column("diagnosis", no_wrap=True)
    for result in results:
        target = result.scenario.target
        what = (
            f"select_n: selector {_selector_cell(result)}, {target.cases} cases of {shape_text(target.shape)}"
            if isinstance(target, SelectN)
            else target.label
        )
        blamed = dict.fromkeys(
            PATH_LABELS[base_name(p)] for p in result.paths if base_name(p) in AD_PATHS and _blamed(result, p)
        )
        table.add_row(
            Text(result.scenario.name).append(f"\n{what}", style="dim"),
            Text(result.status, style=STATUS_STYLES[result.status]),
            Text(", ".join(blamed) or "—", style="red" if blamed else "dim"),
            *([Text(result.diagnosis.id if result.diagnosis else "", style="bold yellow")] if diagnosed else []),
        )
    return table


def select_n_table(results: Sequence[ScenarioResult]) -> Table:
    return _table(results, SELECT_N_COLUMNS, _scenario_cells, _shown_paths(results), _path_cell)


def function_table(results: Sequence[ScenarioResult]) -> Table:
    """User functions: the function, its inputs and binding, and how each path fared."""
    return _table(results, FUNCTION_COLUMNS, _function_cells, (*AD_PATHS, FINITE_DIFFERENCE), _binding_cell)


KIND_TABLES: dict[type, Callable[[Sequence[ScenarioResult]], Table]] = {
    SelectN: select_n_table,
    FunctionCall: function_table,
}
"""The wide table of each kind of scenario, in the order they are printed."""


def _function_cells(result: ScenarioResult) -> tuple[str, ...]:
    spec = result.scenario.target
    assert isinstance(spec, FunctionCall), "only function tables have these cells"
    fixed = any(not s.differentiable and not s.held for s in spec.inputs)
    return (result.scenario.name, spec.label, spec.describe_inputs(), spec.bind if fixed else "")


def _blamed(result: ScenarioResult, name: str) -> bool:
    """Whether a path is on the wrong side of a finding: against finite differences where they could be compared."""
    references = [p for p in result.paths if base_name(p) in (FINITE_DIFFERENCE, FAMILIES[1].reference)]
    return any(
        name in f.paths and (f.kind != DISAGREEMENT or not references or any(r in f.paths for r in references))
        for f in result.findings
    )


def _no_number(path: PathResult) -> str:
    """`nan` or `inf` where a path that ran gave no finite number at all (the value overflowed: paths
    that agree on NaN are not 'ok' to the eye), else empty."""
    if not path.ok or not path.ok_arrays:
        return ""
    with np.errstate(invalid="ignore"):
        blocks = [np.asarray(b, dtype=np.float64) for b in path.ok_arrays]
        if not any(b.size for b in blocks) or any(np.isfinite(b).any() for b in blocks):
            return ""
        return "nan" if any(np.isnan(b).any() for b in blocks) else "inf"


def _binding_cell(result: ScenarioResult, base: str) -> Text:
    """A function scenario's path across its bindings: ok, differs, n/a or the exception raised."""
    parts = []
    for name in (base, path_name(base, "constant")):
        path = result.paths.get(name)
        if path is None:
            continue
        suffix = " (const)" if name != base else ""
        if path.not_applicable:
            parts.append(Text("n/a" + suffix, style="dim"))
        elif path.error is not None:
            parts.append(Text(path.error.type + suffix, style="magenta"))
        elif base != FINITE_DIFFERENCE and _blamed(result, name):
            parts.append(Text("differs" + suffix, style="red"))
        elif base == FINITE_DIFFERENCE and any(name in n.paths and "kink" in n.message for n in result.notes):
            parts.append(Text("kink" + suffix, style="yellow"))
        elif none_finite := _no_number(path):
            parts.append(Text(none_finite + suffix, style="yellow"))
        elif not suffix:
            parts.append(Text("ok", style="green"))
    return Text(" / ").join(parts) if parts else Text("")


def _scenario_cells(result: ScenarioResult) -> tuple[str, ...]:
    scenario, spec = result.scenario, result.scenario.target
    assert isinstance(spec, SelectN), "only select_n tables have these cells"
    return (scenario.name, _selector_cell(result), str(spec.cases), shape_text(spec.shape), _value_cell(result))


def _headline_findings(result: ScenarioResult, verbose: bool) -> tuple[Sequence[Finding], int]:
    """The findings worth a line, and how many more there are: every finding with -v; else the
    largest disagreement first (each side's value and where), then routing and exceptions."""
    if verbose:
        return result.findings, 0
    # The largest disagreement of the most severe class (`ranked_findings`: every output leads with it).
    largest = [f for f in result.ranked_findings if f.kind == DISAGREEMENT][:1]
    headline = largest + [f for f in result.findings if f.kind in (ROUTING, RAISED)]
    return headline, len(result.findings) - len(headline)


def summary_line(report: AuditReport, seconds: float | None = None, prefix: str = "") -> Text:
    text = counts_line(report.summary, prefix)
    gate = report.gate_summary()
    accepted = [r for r in report.results if r.passed and r.status != CONSISTENT]
    if report.baseline is not None:
        text.append(
            f"; {gate['new']} new, {gate['known']} known, {gate['resolved']} resolved (baseline {report.baseline})"
        )
    elif accepted or any(r.scenario.expect for r in report.results):
        text.append(f"; {gate['passed']} passed, {gate['failed']} failed")
    if gate["reported"]:
        text.append(f"; {gate['reported']} findings reported, not failed ({reported_classes(report)})", style="dim")
    if seconds is not None:
        text.append(f" in {seconds:.1f}s")
    return text


def reported_classes(report: AuditReport) -> str:
    """'2 non-finite, 1 non-differentiable': the findings the gate reported but did not fail, by class."""
    counts: dict[str, int] = {}
    for result in report.results:
        reported = set(result.outcome.reported) if result.outcome else set()
        for finding in result.findings:
            if finding.fingerprint in reported:
                counts[finding.finding_class] = counts.get(finding.finding_class, 0) + 1
    return ", ".join(f"{counts[c]} {c}" for c in CLASSES if c in counts)


def counts_line(summary: dict[str, int], prefix: str = "") -> Text:
    """'17 scenarios: 6 consistent, 9 mismatch, 2 error'."""
    noun = "scenario" if summary["total"] == 1 else "scenarios"
    text = Text(f"{prefix}{summary['total']} {noun}: ")
    for i, status in enumerate((CONSISTENT, MISMATCH, ERROR, INTERRUPTED)):
        if status not in summary:
            continue
        if i:
            text.append(", ")
        text.append(f"{summary[status]} {status}", style=STATUS_STYLES[status] if summary[status] else "")
    return text


def print_diagnosis(
    console: Console, diagnosis: Diagnosis, scenarios: Sequence[str] = (), evidence: bool = False
) -> None:
    """One catalog entry: id and title, (with `evidence`) what it must see, what it means, the fixes, and where it was
    seen."""
    console.print(Text(f"{diagnosis.id} ", style="bold yellow").append(diagnosis.title, style="bold"), highlight=False)
    if evidence:
        console.print(Text(f"  matches when: {diagnosis.evidence}", style="italic"), highlight=False)
    console.print(Text("  " + diagnosis.explanation), highlight=False)
    for number, fix in enumerate(diagnosis.fixes, 1):
        console.print(Text(f"  fix {number}: {fix}"), highlight=False)
    for reference in diagnosis.references:
        console.print(Text(f"  see {reference}", style="dim"), highlight=False)
    if scenarios:
        console.print(Text(f"  seen in: {', '.join(scenarios)}", style="dim"), highlight=False)


def _finding_line(result: ScenarioResult, message: str, style: str, finding: Finding | None = None) -> Text:
    """`file:line: scenario: [class] message`: the class first, as ruff puts its code first."""
    line = Text(f"{result.scenario.source}: ", style="bold")
    line.append(f"{result.scenario.name}: ")
    if finding is not None:
        line.append(f"[{finding.finding_class}] ", style="bold " + CLASS_STYLES.get(finding.finding_class, ""))
    return line.append(message, style=style)


def print_report(
    console: Console, report: AuditReport, verbose: bool = False, quiet: bool = False, seconds: float | None = None
) -> None:
    """Tables (non-consistent scenarios only unless verbose), findings, diagnoses, then the summary.
    Past `MANY` such scenarios (without -v), findings are grouped by kind and tables cut at `ROWS`."""
    shown = [r for r in report.results if verbose or r.status != CONSISTENT or not r.passed]
    grouped = not verbose and len(shown) > MANY
    if shown and not quiet:
        rows = shown[:ROWS] if grouped else shown
        by_kind = {kind: [r for r in rows if isinstance(r.scenario.target, kind)] for kind in KIND_TABLES}
        tables = (
            [compact_table(rows)]
            if console.width < NARROW
            else [KIND_TABLES[kind](kind_rows) for kind, kind_rows in by_kind.items() if kind_rows]
        )
        for table in tables:
            console.print(table)
        if grouped:
            console.print(
                Text(
                    f"the first {ROWS} of {len(shown):,} scenarios with findings; -v shows every row, --json and "
                    "--junit keep every result",
                    style="dim",
                )
            )
            console.print()
            _print_kinds(console, shown)
        else:
            console.print()
            failing = [r for r in shown if not r.passed]
            for result in failing:
                _print_findings(console, result, verbose)
            accepted = [r for r in shown if r.passed and r.findings and not verbose and _all_known(r)]
            passing = [r for r in shown if r.passed and r.findings and r not in accepted]
            if passing:
                if failing:
                    console.print()
                classes = ", ".join(dict.fromkeys(f.finding_class.value for r in passing for f in r.findings))
                console.print(
                    Text(f"reported, not failed ({classes}; --fail-on chooses):", style="bold dim"), highlight=False
                )
                for result in passing:
                    _print_findings(console, result, verbose)
            if accepted and (failing or passing):
                console.print()
            for result in accepted:  # known already: a line each, their findings with -v
                assert result.outcome is not None, "a result with known findings was gated"
                count = f"{len(result.findings)} finding{'s' * (len(result.findings) != 1)}"
                console.print(
                    _finding_line(result, f"passes: {result.outcome.reason}: {count} (-v shows them)", "dim"),
                    highlight=False,
                    soft_wrap=True,
                )
            for result in (
                r for r in shown if r.passed and not r.findings and (_unchecked(r) or (verbose and r.notes))
            ):
                _print_findings(console, result, verbose)
        console.print()
        seen: dict[str, list[str]] = {}
        for result in shown:
            if result.diagnosis is not None and (verbose or grouped or not _all_known(result)):
                seen.setdefault(result.diagnosis.id, []).append(result.scenario.name)
        for diagnosis_id, names in seen.items():
            print_diagnosis(console, BY_ID[diagnosis_id], _some(names) if grouped else names)
            console.print()
    suites = report.suite_summaries()
    if len(suites) > 1 and not quiet:
        for suite, counts in suites.items():
            console.print(counts_line(counts, prefix=f"  {suite}: "), highlight=False)
    for name, fingerprint in report.resolved if not quiet else ():
        console.print(Text(f"resolved since the baseline: {name}: {fingerprint}", style="green"), highlight=False)
    console.print(summary_line(report, seconds), highlight=False)


def _print_findings(console: Console, result: ScenarioResult, verbose: bool) -> None:
    """A scenario's findings as file:line lines, its gate outcome, and (verbose) its notes."""
    style = STATUS_STYLES[result.status] if not result.passed else "dim"
    headline, more = _headline_findings(result, verbose)
    for finding in headline:
        console.print(_finding_line(result, finding.message, style, finding), highlight=False, soft_wrap=True)
        if finding.reason:
            console.print(
                Text("    why: ", style="dim").append(finding.reason, style="dim"), highlight=False, soft_wrap=True
            )
    if more:
        console.print(
            _finding_line(result, f"+{more} more finding{'s' if more > 1 else ''} (-v)", "dim"),
            highlight=False,
            soft_wrap=True,
        )
    if result.outcome is not None and (not result.passed or result.findings or _unchecked(result)):
        marker = "FAILED" if not result.passed else "passes"
        console.print(
            _finding_line(result, f"{marker}: {result.outcome.reason}", "bold" if not result.passed else "dim"),
            highlight=False,
            soft_wrap=True,
        )
    if verbose:
        for note in result.notes:
            console.print(_finding_line(result, "note: " + note.message, "dim"), highlight=False, soft_wrap=True)


def _all_known(result: ScenarioResult) -> bool:
    """Whether a scenario passes because a baseline or an expectation knows every finding it has."""
    known = set(result.outcome.known) if result.passed and result.outcome is not None else set()
    return bool(result.findings) and all(f.fingerprint in known for f in result.findings)


def _unchecked(result: ScenarioResult) -> bool:
    """Whether finite differences could check none of the scenario's entries (its outcome says so)."""
    count, of = result.unchecked
    return 0 < of == count


def _kind(result: ScenarioResult) -> str:
    """What groups a scenario with others in the terminal: its status and its headline finding's
    signature and class of wrong value (its gate outcome where it has no finding)."""
    headline, _ = _headline_findings(result, False)
    if not headline:
        return f"{result.status}: {result.outcome.reason if result.outcome else 'no finding'}"
    first = headline[0]
    return f"{result.status}: {first.finding_class}: {first.signature}" + (f"|{first.wrong}" if first.wrong else "")


def _print_kinds(console: Console, shown: Sequence[ScenarioResult]) -> None:
    """Findings grouped by kind, most frequent first: a count, the kind, and `EXAMPLES` scenarios' lines."""
    kinds: dict[str, list[ScenarioResult]] = {}
    for result in shown:
        kinds.setdefault(_kind(result), []).append(result)
    failing = sum(not r.passed for r in shown)
    console.print(
        Text(
            f"{len(shown):,} scenarios with findings ({failing:,} failing) in {len(kinds)} kinds; -v lists each "
            "scenario's findings",
            style="bold",
        )
    )
    for kind, results in sorted(kinds.items(), key=lambda item: -len(item[1])):
        style = STATUS_STYLES[results[0].status] if not results[0].passed else "dim"
        console.print(
            Text(f"{len(results):>7,}  ", style="bold").append(kind, style=style), highlight=False, soft_wrap=True
        )
        for result in results[:EXAMPLES]:
            headline, _ = _headline_findings(result, False)
            message = headline[0].message if headline else (result.outcome.reason if result.outcome else "")
            console.print(
                Text("         e.g. ").append(_finding_line(result, message, "", headline[0] if headline else None)),
                highlight=False,
                soft_wrap=True,
            )
        if len(results) > EXAMPLES:
            console.print(Text(f"         and {len(results) - EXAMPLES:,} more", style="dim"), highlight=False)


def _some(names: Sequence[str]) -> list[str]:
    """The first `EXAMPLES` names, and how many more."""
    return list(names) if len(names) <= EXAMPLES else [*names[:EXAMPLES], f"and {len(names) - EXAMPLES:,} more"]


def print_input_errors(console: Console, errors: Sequence[InputError], audited: bool = False) -> None:
    """Every input error as `file:line:col: message`, then a count."""
    for error in errors:
        console.print(
            Text(str(error.location) + ": ", style="bold").append(error.message, style="red"),
            highlight=False,
            soft_wrap=True,
        )
    files = len({error.location.file for error in errors})
    noun = "error" if len(errors) == 1 else "errors"
    consequence = "the other scenarios were audited" if audited else "nothing was audited"
    console.print(
        f"{len(errors)} input {noun} in {files} file{'s' if files != 1 else ''}; {consequence}", highlight=False
    )


def comparison_tables(comparison: RuleComparison) -> list[Table]:
    """A table per target kind, a row per scenario; per rule, the reverse-mode result (or exception) and the verdict."""
    rows = comparison.rows()
    kinds = (
        (SELECT_N_COLUMNS, _scenario_cells, _path_cell, "select_n"),
        (FUNCTION_COLUMNS, _function_cells, _binding_cell, "function"),
    )
    tables = []
    for columns, cells_of, path_cell, kind in kinds:
        chosen = [row for row in rows if row[0].scenario.target.kind == kind]
        if not chosen:
            continue
        table = Table(header_style="bold")
        for header, options in columns:
            table.add_column(header, **options)
        for rule in comparison.rules:
            table.add_column(f"jacrev\n{rule}", overflow="fold")
            table.add_column(f"verdict\n{rule}", no_wrap=True)
        for row in chosen:
            cells: list[str | Text] = list(cells_of(row[0]))
            for result in row:
                cells.append(path_cell(result, JACREV))
                cells.append(Text(result.status, style=STATUS_STYLES[result.status]))
            table.add_row(*cells)
        tables.append(table)
    return tables


def change_line(comparison: RuleComparison, before: int, after: int) -> Text:
    """What changed between two rules: 'legacy → fixed: 11 changed (9 mismatch → consistent, …), 6 unchanged'."""
    transitions = comparison.transitions(before, after)
    changed = {pair: n for pair, n in sorted(transitions.items()) if pair[0] != pair[1]}
    unchanged = sum(n for pair, n in transitions.items() if pair[0] == pair[1])
    text = Text(f"{comparison.rules[before]} → {comparison.rules[after]}: ")
    if not changed:
        return text.append(f"no verdict changed ({unchanged} unchanged)")
    detail = ", ".join(f"{n} {before} → {after}" for (before, after), n in changed.items())
    return text.append(f"{sum(changed.values())} changed ({detail}), {unchanged} unchanged")


def print_comparison(
    console: Console, comparison: RuleComparison, seconds: float | None = None, quiet: bool = False
) -> None:
    if not quiet:
        for table in comparison_tables(comparison):
            console.print(table)
        console.print()
    for rule, report in zip(comparison.rules, comparison.reports, strict=True):
        console.print(summary_line(report, prefix=f"{rule}: "), highlight=False)
    for before in range(len(comparison.rules) - 1):
        console.print(change_line(comparison, before, before + 1), highlight=False)
    if seconds is not None:
        console.print(f"in {seconds:.1f}s", highlight=False)


def print_listing(console: Console, scenarios: Sequence[Scenario]) -> None:
    """One line per scenario, `file:line:col: name [suite] parameters`, then a count."""
    for scenario in scenarios:
        line = (
            Text(f"{scenario.source}: ", style="bold")
            .append(scenario.name)
            .append(f" [{scenario.suite}] ", style="dim")
        )
        console.print(line.append(scenario.describe()), highlight=False, soft_wrap=True)
    console.print(f"{len(scenarios)} scenario{'s' if len(scenarios) != 1 else ''}", highlight=False)


def print_diff(console: Console, diff: ReportDiff, quiet: bool = False) -> None:
    """Environment changes; a row per scenario whose status or findings changed; what each new
    finding says; one summary line (alone when `quiet`)."""
    if not quiet:
        _print_diff_details(console, diff)
    console.print(
        f"{diff.before} → {diff.after}: {len(diff.new)} new findings, {len(diff.resolved)} resolved, "
        f"{len(diff.changed)} scenarios changed, {len(diff.added)} added, {len(diff.removed)} removed, "
        f"{diff.unchanged} unchanged",
        highlight=False,
    )


def _print_diff_details(console: Console, diff: ReportDiff) -> None:
    for key, (before, after) in diff.environment.items():
        console.print(f"{key}: {before} → {after}", highlight=False)
    new, resolved = _by_scenario(diff.new), _by_scenario(diff.resolved)
    statuses = {name: (before, after) for name, before, after in diff.changed}
    names = list(dict.fromkeys([*statuses, *new, *resolved]))
    if names:
        table = Table(header_style="bold")
        table.add_column("scenario", overflow="fold")
        table.add_column("status", no_wrap=True)
        table.add_column("new findings", overflow="fold", style="bold red")
        table.add_column("resolved findings", overflow="fold", style="green")
        for name in names:
            status = Text()
            if name in statuses:
                before, after = statuses[name]
                status.append(before, style=STATUS_STYLES.get(before, ""))
                if after != before:
                    status.append(" → ").append(after, style=STATUS_STYLES.get(after, ""))
            table.add_row(
                name,
                status,
                "\n".join(c.fingerprint for c in new.get(name, [])),
                "\n".join(c.fingerprint for c in resolved.get(name, [])),
            )
        console.print(table)
    for change in diff.new:
        console.print(
            Text(f"new: {change.scenario}: ", style="bold red").append(change.message, style=""), highlight=False
        )
    for title, scenarios in (("added", diff.added), ("removed", diff.removed)):
        if scenarios:
            console.print(f"{title} scenarios ({len(scenarios)}): {', '.join(scenarios)}", highlight=False)


def _by_scenario(changes: Sequence[FindingChange]) -> dict[str, list[FindingChange]]:
    grouped: dict[str, list[FindingChange]] = {}
    for change in changes:
        grouped.setdefault(change.scenario, []).append(change)
    return grouped


def print_search(
    console: Console, name: str, outcome: SearchOutcome, written: Sequence, budget: int, reproduce: str
) -> None:
    """What a search tried and skipped, and each minimal scenario it wrote with its findings."""
    skipped = sum(outcome.skipped.values())
    line = f"search {name}: {outcome.audited} scenarios audited (budget {budget}"
    line += ")" if outcome.audited + sum(outcome.not_audited.values()) >= budget else ": the space holds no more)"
    line += f", {outcome.shrinking} more while shrinking"
    if skipped:
        line += (
            f", {skipped} drawn and skipped ("
            + "; ".join(f"{reason}: {n}" for reason, n in outcome.skipped.most_common(3))
            + ")"
        )
    console.print(line, highlight=False)
    if outcome.not_audited:
        console.print(not_audited_line(outcome.not_audited), highlight=False)
    for found in outcome.unconfirmed:
        console.print(
            f"not confirmed: the fast path saw {found.kind[0]} ({', '.join(found.kind[1])}), but the literal path "
            "finds the minimal scenario consistent; not reported",
            highlight=False,
        )
    if not outcome.found:
        console.print(
            Text(f"nothing found: all {outcome.audited} scenarios audited were consistent", style="green"),
            highlight=False,
        )
        return
    table = Table(header_style="bold")
    table.add_column("minimal scenario", overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("findings", overflow="fold")
    for path, found in zip(written, outcome.found, strict=True):
        status = found.result.status
        fingerprints = dict.fromkeys(f.fingerprint for f in found.result.findings)
        table.add_row(str(path), Text(status, style=STATUS_STYLES.get(status, "")), "\n".join(fingerprints))
    console.print(table)
    console.print(
        f"{len(outcome.found)} kind{'s' if len(outcome.found) != 1 else ''} of disagreement found; reproduce: "
        f"{reproduce}",
        highlight=False,
    )


def not_audited_line(not_audited: Mapping[str, int]) -> str:
    """What a search left unaudited where its audits kept timing out (`model.found.HANGS_PER_ARGUMENT`)."""
    where = "; ".join(f"{place}: {count}" for place, count in not_audited.items())
    total = sum(not_audited.values())
    return f"{total} drawn scenarios not audited, further out in an input than audits that timed out ({where})"


def print_survey_table(console: Console, spaces: Sequence) -> None:
    """The surveyed functions: name, public path, arguments' roles, static options, shapes."""
    table = Table(header_style="bold")
    for column in ("name", "function", "arguments", "options", "shapes"):
        table.add_column(column, overflow="fold")
    for space in spaces:
        entry = space.surveyed
        options = "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in entry.options.items())
        derived = "; ".join(f"{k}: from the shape" for k in entry.derived)
        table.add_row(
            space.name, entry.path, " ".join(entry.signature), "; ".join(filter(None, (options, derived))), entry.shapes
        )
    console.print(table)
    public = {s.surveyed.public for s in spaces} - {None}
    written = {s.surveyed.path for s in spaces if not s.surveyed.path.startswith("jax.")}
    standing = {s.surveyed.path for s in spaces if s.surveyed.surveys}
    console.print(
        f"{len(spaces)} surveyed entries: {len(public)} public JAX functions and {len(written)} written-out calls "
        f"({len(standing)} of them standing for a public function)",
        highlight=False,
    )


def print_left_out(console: Console, left_out: dict[str, str], not_yet: Sequence[str]) -> None:
    """The public callables the survey leaves out, with why; then those this JAX has that no list names."""
    table = Table(header_style="bold")
    for column in ("function", "why it is not surveyed"):
        table.add_column(column, overflow="fold")
    for path, reason in left_out.items():
        table.add_row(path, reason)
    for path in not_yet:
        table.add_row(path, Text("not yet surveyed: new in this JAX, or not probed", style="yellow"))
    console.print(table)
    console.print(f"{len(left_out)} public callables left out, {len(not_yet)} not yet surveyed", highlight=False)


def print_survey(console: Console, surveyed: Sequence, reproduce: str) -> None:
    """Per function: scenarios audited, kinds found, the worst status and the files; then a total."""
    table = Table(header_style="bold")
    for column in ("function", "audited", "skipped", "kinds", "worst", "files"):
        table.add_column(column, overflow="fold")
    for one in surveyed:
        outcome = one.outcome
        worst = Text(one.worst, style=STATUS_STYLES.get(one.worst, ""))
        table.add_row(
            one.space.name,
            str(outcome.audited),
            str(sum(outcome.skipped.values())),
            str(len(outcome.found)),
            worst,
            "\n".join(p.name for p in one.files),
        )
    console.print(table)
    for one in surveyed:
        if one.outcome.not_audited:
            console.print(f"{one.space.name}: {not_audited_line(one.outcome.not_audited)}", highlight=False)
    kinds = sum(len(one.outcome.found) for one in surveyed)
    found = sum(1 for one in surveyed if one.outcome.found)
    console.print(
        f"surveyed {len(surveyed)} function entries: {kinds} kind{'s' if kinds != 1 else ''} of disagreement in {found}"
        + (f"; reproduce: {reproduce}" if kinds else ""),
        highlight=False,
    )


def print_defects(console: Console, defects: Sequence[dict], shown: int = 20) -> None:
    """The survey's defects, most severe first: what kind, in which regime, where, and how to reproduce it."""
    if not defects:
        return
    table = Table(header_style="bold", title="defects, most severe first")
    for column in ("#", "severity", "what", "regime", "functions", "reproducer"):
        table.add_column(column, overflow="fold")
    for defect in defects[:shown]:
        what = f"[{defect['class']}] {defect['kind']} {'+'.join(defect['paths'])}" + (
            f" ({defect['wrong']})" if defect["wrong"] else ""
        )
        functions = ", ".join(defect["functions"][:4]) + (" …" if len(defect["functions"]) > 4 else "")
        table.add_row(
            str(defect["rank"]), defect["severity"], what, defect["regime"], functions, Path(defect["reproducer"]).name
        )
    console.print(table)
    counts = Counter(defect["severity"] for defect in defects)
    more = f" ({len(defects) - shown} more in the JSON report and --defects)" if len(defects) > shown else ""
    console.print(
        f"{len(defects)} defects: " + ", ".join(f"{n} {severity}" for severity, n in counts.items()) + more,
        highlight=False,
    )


def print_survey_diff(console: Console, before: str, after: str, changes: Sequence, quiet: bool = False) -> None:
    """Each kind new or resolved between two surveys, then a summary line."""
    if not quiet:
        for change in changes:
            style = "red" if change.change == "new" else "green"
            console.print(
                Text(
                    f"{change.change}: {change.function}: {change.status} ({', '.join(change.signatures)}) "
                    f"{change.file}",
                    style=style,
                ),
                highlight=False,
                soft_wrap=True,
            )
    new = sum(c.change == "new" for c in changes)
    console.print(f"{before} → {after}: {new} new kinds, {len(changes) - new} resolved", highlight=False)
