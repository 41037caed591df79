"""The commands: each reads its flags, calls the audit service or a report tool, and renders."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import click

from gradaudit.cli.app import EXIT_FINDINGS, EXIT_INPUT, EXIT_OK, InputProblem, configured, exit_code, guarded, main
from gradaudit.cli.flags import (
    AUDIT,
    SELECTION,
    color_option,
    debug_option,
    exit_zero_option,
    flags,
    options_from,
    output_options,
    output_setting,
    paths_argument,
    profile_option,
)
from gradaudit.cli.session import Session, check_writable, console, write_atomic
from gradaudit.collector import long_lived
from gradaudit.model.errors import did_you_mean
from gradaudit.model.options import RULES


def _paths(paths: Sequence[str]) -> Sequence[str]:
    return paths or output_setting("paths", ()) or ()


def _session(
    json_path, junit_path, format, color, json_option: str = "--json", options=None, html_path=None, sarif_path=None
) -> Session:
    return Session(
        output_setting("color", color),
        output_setting("json", json_path),
        output_setting("junit", junit_path),
        output_setting("format", format),
        json_option,
        options.json_detail if options is not None else "findings",
        output_setting("html", html_path),
        output_setting("sarif", sarif_path),
    )


@main.command()
@paths_argument
@flags("rule", *SELECTION, "baseline", *AUDIT)
@profile_option
@output_options
@click.option(
    "--repro-dir",
    "repro_dir",
    metavar="DIR",
    help="Write each wrong or eager-jit finding as a standalone script in plain JAX and NumPy to DIR.",
)
@guarded
@long_lived()  # what it loads and reports lives until it exits: no full garbage collection meanwhile
def run(
    paths,
    profile,
    json_path,
    junit_path,
    html_path,
    sarif_path,
    format,
    verbose,
    quiet,
    color,
    exit_zero,
    repro_dir=None,
    **given,
) -> int:
    """Audit every scenario in PATHS (YAML files, or folders searched for *.yaml and *.yml).

    Exit 0 when every scenario passes, 1 when any fails, 2 for bad input.
    """
    from gradaudit.cli.profile import Profile
    from gradaudit.render.terminal import print_report
    from gradaudit.service import AuditInterrupted, start_workers

    options = options_from(given)
    session = _session(
        json_path, junit_path, format, color, options=options, html_path=html_path, sarif_path=sarif_path
    )
    session.check_repro_dir(repro_dir)
    profiler = Profile(enabled=profile)
    with profiler.phase("load"):
        start_workers(options, _paths(paths))
        loaded = session.load(_paths(paths), options.user_code)
    if loaded is None:
        return EXIT_INPUT
    interrupted = None
    with profiler.phase("audit"):
        try:
            report = session.audit(loaded, options)
        except AuditInterrupted as exc:
            interrupted, report = exc, exc.report
    with profiler.phase("report"):
        if "rich" in session.formats:
            print_report(session.out, report, verbose=verbose, quiet=quiet, seconds=session.elapsed())
        session.annotate(report)
        session.write_files(report)
        session.write_reproducers(report)
    profiler.print(session.err, report)
    if interrupted is not None:
        raise interrupted
    if session.refused(report):
        return EXIT_INPUT
    code = exit_code(report.passed, output_setting("exit_zero", exit_zero))
    if code == EXIT_FINDINGS and not quiet:
        session.say_why_it_failed(report)
    return code


@main.command("baseline")
@paths_argument
@flags("rule", *SELECTION, *AUDIT)
@click.option(
    "-o", "--output", required=True, metavar="FILE", help="Where to write the baseline report ('-' for stdout)."
)
@color_option
@debug_option
@guarded
@long_lived()
def baseline_command(paths, output, color, **given) -> int:
    """Write a baseline: the JSON report of PATHS, whose findings later runs accept with --baseline.

    Exit 0 when written (findings included), 2 for bad input.
    """
    from gradaudit.render.terminal import summary_line
    from gradaudit.service import start_workers

    options = options_from({**given, "baseline": None}).updated(baseline=None)
    session = Session(output_setting("color", color), json_path=output, formats=("rich",), json_option="-o")
    start_workers(options, _paths(paths))
    loaded = session.load(_paths(paths), options.user_code)
    if loaded is None:
        return EXIT_INPUT
    report = session.audit(loaded, options)
    session.write_files(report)
    session.err.print(summary_line(report, session.elapsed(), prefix=f"baseline {output}: "), highlight=False)
    return EXIT_INPUT if session.refused(report) else EXIT_OK


@main.command("list")
@paths_argument
@flags(*SELECTION)
@color_option
@debug_option
@guarded
def list_command(paths, color, **given) -> int:
    """List the scenarios in PATHS: source, name, suite and parameters, after -k and --shard."""
    from gradaudit.render.terminal import print_listing
    from gradaudit.service import selected

    session = Session(output_setting("color", color))
    options = options_from(given)
    loaded = session.load(_paths(paths), options.user_code)
    if loaded is None:
        return EXIT_INPUT
    print_listing(session.out, selected(loaded.scenarios, options))
    return EXIT_OK


def _read_reports(action):
    """Run a report tool, its refusals (unusable or damaged reports) made exit 2."""
    from gradaudit.sources.saved_reports import ReportError

    try:
        return action()
    except ReportError as exc:
        raise InputProblem(str(exc)) from None
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # damage read_report does not name
        raise InputProblem(f"a report is damaged: {type(exc).__name__}: {exc}") from None


@main.command()
@click.argument("reports", nargs=-1, required=True, type=click.Path())
@click.option(
    "-o", "--output", required=True, metavar="FILE", help="Where to write the merged report ('-' for stdout)."
)
@click.option(
    "--defects",
    "defects_path",
    metavar="PATH",
    help="Surveys: write the merged survey's defects, ranked, as Markdown to PATH (as `survey --defects`).",
)
@color_option
@exit_zero_option
@debug_option
@guarded
def merge(reports, output, defects_path, color, exit_zero) -> int:
    """Merge JSON reports (shards of one run, or of one survey) into one, whose counts equal a single full run's.

    Exit 0 when every merged scenario passed, 1 when any failed, 2 for unusable reports.
    """
    from gradaudit.merge import merge_reports
    from gradaudit.render.json_report import dump
    from gradaudit.render.terminal import counts_line
    from gradaudit.survey.explore import is_survey, merge_surveys

    session = Session(output_setting("color", color), json_path=output, json_option="-o")
    check_writable("--defects", defects_path)
    if _read_reports(lambda: is_survey(reports[0])):
        survey = _read_reports(lambda: merge_surveys(list(reports)))
        write_atomic(output, json.dumps(survey, indent=2) + "\n")
        if defects_path:
            from gradaudit.render.defects_markdown import defects_markdown

            write_atomic(defects_path, defects_markdown(survey, Path(defects_path).parent))
        kinds = sum(len(f["kinds"]) for f in survey["functions"])
        session.err.print(
            f"merged {len(reports)} survey reports: {len(survey['functions'])} function entries, {kinds} kinds",
            highlight=False,
        )
        return exit_code(kinds == 0, output_setting("exit_zero", exit_zero))
    if defects_path:
        raise InputProblem("--defects is for survey reports; these are run reports")
    merged = _read_reports(lambda: merge_reports(list(reports)))
    write_atomic(output, dump(merged))
    session.err.print(counts_line(merged["summary"], prefix=f"merged {len(reports)} reports: "), highlight=False)
    return exit_code(merged["gate"]["failed"] == 0, output_setting("exit_zero", exit_zero))


@main.command()
@click.argument("before", type=click.Path())
@click.argument("after", type=click.Path())
@click.option("--json", "json_path", metavar="PATH", help="Write the differences as JSON to PATH ('-' for stdout).")
@click.option("-q", "--quiet", is_flag=True, help="Show only the summary line.")
@color_option
@exit_zero_option
@debug_option
@guarded
def diff(before, after, json_path, quiet, color, exit_zero) -> int:
    """What changed from report BEFORE to report AFTER: new and resolved findings, status changes.

    Read a JAX upgrade this way: a report under the old version, one under the new, then diff.
    Exit 0 when AFTER has no new finding, 1 when it has, 2 for unusable reports.
    """
    from gradaudit.diff import diff_reports
    from gradaudit.render.terminal import print_diff, print_survey_diff
    from gradaudit.survey.explore import diff_surveys, is_survey

    session = Session(output_setting("color", color), json_path=json_path)
    if _read_reports(lambda: is_survey(before)):
        survey_changes = _read_reports(lambda: diff_surveys(before, after))
        if json_path:
            write_atomic(
                json_path,
                json.dumps([vars(c) | {"signatures": list(c.signatures)} for c in survey_changes], indent=2) + "\n",
            )
        print_survey_diff(session.out, before, after, survey_changes, quiet)
        return exit_code(not any(c.change == "new" for c in survey_changes), output_setting("exit_zero", exit_zero))
    changes = _read_reports(lambda: diff_reports(before, after))
    if json_path:
        write_atomic(json_path, json.dumps(changes.to_dict(), indent=2) + "\n")
    print_diff(session.out, changes, quiet=quiet)
    return exit_code(not changes.new, output_setting("exit_zero", exit_zero))


@main.command()
@click.argument("space", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    default=300,
    show_default=True,
    help="Distinct valid scenarios to audit (shrinking comes on top).",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="The search's random seed: the same seed, the same search."
)
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the minimal scenario files.",
)
@flags("rule", "jobs", "cache", "timeout", "user_code")
@click.option(
    "--no-database", is_flag=True, help="Neither keep nor replay hypothesis's examples (kept in .gradaudit/hypothesis)."
)
@color_option
@exit_zero_option
@debug_option
@guarded
def search(space, budget, seed, out, no_database, color, exit_zero, **given) -> int:
    """Let hypothesis explore the scenario space in SPACE and shrink every kind of disagreement
    to a minimal scenario file in --out, which `gradaudit run` reproduces.

    Exit 0 when the budget ran out with nothing found, 1 when something was, 2 for a bad space file.
    """
    import jax
    from rich.progress import Progress, TextColumn, TimeElapsedColumn

    from gradaudit.jaxenv import CACHE_FOLDER
    from gradaudit.render.terminal import print_input_errors, print_search
    from gradaudit.search import SpaceError, confirm, database_folder, foreign_files, read_space, write_found
    from gradaudit.search import search as explore
    from gradaudit.service import isolated, prepare

    options = options_from(given)
    session = Session(output_setting("color", color))
    try:
        parsed = read_space(space, options.user_code)
    except SpaceError as exc:
        print_input_errors(session.err, exc.errors)
        return EXIT_INPUT
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.BadParameter(f"cannot create folder {out}: {exc.strerror or exc}", param_hint="--out") from None
    if not os.access(out, os.W_OK):
        raise click.BadParameter(f"folder {out} is not writable", param_hint="--out")
    foreign = foreign_files(out, parsed.name)
    if foreign:
        raise click.BadParameter(
            f"{foreign[0]} was not written by gradaudit search and would be replaced; choose another folder",
            param_hint="--out",
        )
    _, warnings = prepare(options)
    for warning in warnings:
        session.err.print(f"warning: {warning}", highlight=False)
    storage = CACHE_FOLDER.parent / "hypothesis"
    database = None if no_database else database_folder(space, options.rule, storage)
    with Progress(
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=session.err,
        transient=True,
        disable=not session.err.is_terminal,
    ) as progress:
        task = progress.add_task(f"searching {parsed.name}")

        def tell(message: str) -> None:
            progress.update(task, description=f"searching {parsed.name}: {message}")

        auditor = isolated(options)
        try:
            outcome = explore(
                parsed,
                budget,
                seed,
                auditor.screen,
                database,
                tell,
                options.limits,
                storage,
                audit_all=auditor.screen_all,
            )
            tell("confirming on the literal engine")
            confirm(outcome, parsed, auditor.audit, auditor.options.timeout)
        finally:
            auditor.close()
    if outcome.problem:
        session.err.print(f"{space}: {outcome.problem}", highlight=False)
        return EXIT_INPUT
    command = f"gradaudit search {space} --budget {budget} --seed {seed} --rule {options.rule} --out {out}"
    written = write_found(outcome, parsed, out, f"`{command}` (JAX {jax.__version__}, {jax.default_backend()})")
    print_search(session.out, parsed.name, outcome, written, budget, f"gradaudit run {out} --rule {options.rule}")
    return exit_code(not outcome.found, output_setting("exit_zero", exit_zero))


@main.command()
@click.argument("functions", nargs=-1)
@click.option(
    "--list",
    "listing",
    is_flag=True,
    help="Print the surveyed functions, their arguments' roles and options, and exit.",
)
@click.option(
    "--left-out",
    "left_out",
    is_flag=True,
    help="Print the public functions the survey leaves out, each with why, and any this JAX has that no list names.",
)
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    default=30,
    show_default=True,
    help="Distinct valid scenarios drawn per function after its edge sweep (shrinking comes on top).",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="The survey's random seed: the same seed, the same survey."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("survey"),
    show_default=True,
    help="Folder for the reproducer files.",
)
@click.option(
    "--json", "json_path", metavar="PATH", help="Write the survey report (gradaudit.survey/1) to PATH ('-' for stdout)."
)
@click.option(
    "--html",
    "html_path",
    metavar="PATH",
    help=(
        "Write a self-contained HTML page to PATH: a function × dtype matrix linking to each kind's findings and "
        "pictures."
    ),
)
@click.option(
    "--defects",
    "defects_path",
    metavar="PATH",
    help="Write the defects, ranked, each with its plainest reproducer and plain-JAX script, as Markdown to PATH.",
)
@click.option(
    "--shard",
    metavar="K/N|auto|auto/N",
    help=(
        "Only shard K of N (balanced by estimated cost, the same split on every machine; merge the reports with "
        "`gradaudit merge`); auto: a SLURM array job's, auto/N: a Kubernetes Indexed Job's."
    ),
)
@flags("rule", "jobs", "cache", "timeout")
@color_option
@exit_zero_option
@debug_option
@guarded
def survey(
    functions,
    listing,
    left_out,
    budget,
    seed,
    out,
    json_path,
    html_path,
    defects_path,
    shard,
    color,
    exit_zero,
    **given,
) -> int:
    """Survey JAX's differentiable functions (FUNCTIONS by public path, e.g. jax.numpy.take; none:
    all of them): draw scenarios from each function's roles and the shared edge values, and shrink
    every kind of disagreement to a scenario file in --out, which `gradaudit run` reproduces.

    Exit 0 when nothing was found, 1 when something was, 2 for an unknown function.
    """
    from gradaudit.render.terminal import print_defects, print_survey, print_survey_table
    from gradaudit.sources.selection import shard_from_environment
    from gradaudit.survey import explore
    from gradaudit.survey.explore import SURVEY_TIMEOUT, UnknownFunction, spaces, table_names

    options = options_from(given)
    if given.get("timeout") is None and "timeout" not in configured():
        options = dataclasses.replace(options, timeout=SURVEY_TIMEOUT)
    session = Session(output_setting("color", color), html_path=html_path)
    check_writable("--json", json_path)
    check_writable("--defects", defects_path)
    try:
        chosen = spaces(functions)
    except UnknownFunction as exc:
        raise click.BadParameter(str(exc), param_hint="FUNCTIONS") from None
    for name, entry in table_names(functions).items():
        if entry != name:
            session.err.print(f"{name} is surveyed as {entry}", style="dim", highlight=False, soft_wrap=True)
    if shard:
        try:
            k, n = shard_from_environment(shard, dict(os.environ))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--shard") from None
        chosen = explore.shard(chosen, k, n, budget)
    if listing:
        print_survey_table(session.out, chosen)
        return EXIT_OK
    if left_out:
        from gradaudit.render.terminal import print_left_out
        from gradaudit.survey import surface

        accounted = surface.accounted()
        reasons = {path: why for path, why in accounted.items() if not why.startswith("surveyed")}
        print_left_out(session.out, reasons, surface.not_yet_surveyed())
        return EXIT_OK
    import jax
    from rich.progress import Progress, TextColumn, TimeElapsedColumn

    from gradaudit.render.repro import write_beside
    from gradaudit.search import foreign_files
    from gradaudit.service import environment, isolated, prepare, remembered_interrupt
    from gradaudit.survey.explore import report_document, survey_each

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.BadParameter(f"cannot create folder {out}: {exc.strerror or exc}", param_hint="--out") from None
    foreign = [path for space in chosen for path in foreign_files(out, space.name, scripts=True)]
    if foreign:
        raise click.BadParameter(
            f"{foreign[0]} was not written by gradaudit survey and would be replaced; choose another folder",
            param_hint="--out",
        )
    devices, warnings = prepare(options)
    for warning in warnings:
        session.err.print(f"warning: {warning}", highlight=False)
    how = (
        f"`gradaudit survey --budget {budget} --seed {seed} --rule {options.rule}` (JAX {jax.__version__}, "
        f"{jax.default_backend()})"
    )
    done = []
    with Progress(
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=session.err,
        transient=True,
        disable=not session.err.is_terminal,
    ) as progress:
        task = progress.add_task("surveying")
        auditor = isolated(options)
        interrupted = False
        try:
            # Ctrl-C or SIGTERM (a CI runner's stop) ends the survey after what finished: its reports
            # are written for the functions surveyed whole, nothing of them lost
            with remembered_interrupt(sigterm=True) as check:

                def tell(name: str, number: int, message: str) -> None:
                    progress.update(task, description=f"surveying {name} ({number} of {len(chosen)}): {message}")

                for one in survey_each(chosen, budget, seed, auditor, out, how, options.limits, tell, write_beside):
                    done.append(one)
                    check()
        except KeyboardInterrupt:
            interrupted = True
        finally:
            auditor.close()
    document = report_document(done, environment(options.rule, devices), budget, seed)
    if json_path:
        write_atomic(json_path, json.dumps(document, indent=2) + "\n")
    if html_path:
        from gradaudit.render.html_report import survey_html

        kinds = {
            str(path): found.result for one in done for found, path in zip(one.outcome.found, one.files, strict=False)
        }
        write_atomic(html_path, survey_html(document, kinds))
    if defects_path:
        from gradaudit.render.defects_markdown import defects_markdown

        write_atomic(defects_path, defects_markdown(document, Path(defects_path).parent))
    print_survey(session.out, done, f"gradaudit run {out} --rule {options.rule}")
    print_defects(session.out, document["defects"])
    if interrupted:
        session.err.print(
            f"interrupted: {len(done)} of {len(chosen)} functions surveyed whole; the reports hold those",
            highlight=False,
        )
        return EXIT_INPUT
    return exit_code(not any(one.outcome.found for one in done), output_setting("exit_zero", exit_zero))


def split_rules(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """Separate `--rules A B ...` (or `--rules=A,B`) from the paths around it."""
    paths: list[str] = []
    rules: list[str] = []
    taking_rules = False
    for arg in args:
        if arg == "--rules":
            taking_rules = True
        elif arg.startswith("--rules="):
            rules.extend(r for r in arg.split("=", 1)[1].split(",") if r)
            taking_rules = False
        elif arg.startswith("-") and arg != "-":
            raise click.UsageError(f"no such option: {arg}")
        elif taking_rules and arg in RULES:
            rules.append(arg)
        elif taking_rules and not Path(arg).exists():
            rules.append(arg)  # not a path either: reported below as an unknown rule
        else:
            taking_rules = False
            paths.append(arg)
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        hint = did_you_mean(unknown[0], RULES)
        raise click.BadParameter(
            f"unknown rule '{unknown[0]}'{hint} (allowed: {', '.join(RULES)})", param_hint="--rules"
        )
    if len(rules) < 2 or len(set(rules)) != len(rules):
        raise click.BadParameter(
            f"give two or more different rules from {', '.join(RULES)}, e.g. --rules legacy fixed", param_hint="--rules"
        )
    return paths, rules


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, required=True, metavar="PATH... --rules RULE RULE...")
@flags(*SELECTION, *AUDIT)
@output_options
@guarded
def compare(
    args, json_path, junit_path, html_path, sarif_path, format, verbose, quiet, color, exit_zero, **given
) -> int:
    """Audit PATHs under each of two or more select_n transpose rules and show what changed.

    RULE is installed, legacy or fixed. Exit 0 when the last rule passes everywhere, else 1.
    """
    from gradaudit.model.results import RuleComparison
    from gradaudit.render.terminal import print_comparison, print_report

    paths, rules = split_rules(args)
    options = options_from(given).updated(baseline=None)
    session = _session(
        json_path, junit_path, format, color, options=options, html_path=html_path, sarif_path=sarif_path
    )
    loaded = session.load(_paths(paths), options.user_code)
    if loaded is None:
        return EXIT_INPUT
    reports = tuple(session.audit(loaded, options.updated(rule=rule), f"{rule} rule") for rule in rules)
    comparison = RuleComparison(rules=tuple(rules), reports=reports)
    if "rich" in session.formats:
        print_comparison(session.out, comparison, session.elapsed(), quiet=quiet)
        if verbose:
            for rule, report in zip(rules, reports, strict=True):
                session.out.rule(f"{rule} rule")
                print_report(session.out, report, verbose=True)
    session.annotate(comparison=comparison)
    session.write_files(comparison=comparison)
    if session.refused(reports[0]):
        return EXIT_INPUT
    code = exit_code(reports[-1].passed, output_setting("exit_zero", exit_zero))
    if code == EXIT_FINDINGS and not quiet:
        session.say_why_it_failed(reports[-1])
    return code


@main.command(short_help="Explain a diagnosis: what it means and how to fix it.")
@click.argument("diagnosis_id", required=False, metavar="ID")
@click.option(
    "--markdown", is_flag=True, help="Print the whole catalog as a Markdown page (docs/diagnoses.md is this page)."
)
@color_option
def explain(diagnosis_id: str | None, markdown: bool, color: str) -> None:
    """Explain diagnosis ID (e.g. GA002): what it means and how to fix it. Without ID, list them all."""
    from gradaudit.judging.diagnoses import BY_ID, CATALOG
    from gradaudit.render.terminal import print_diagnosis

    if markdown:
        from gradaudit.render.markdown import diagnoses_page

        click.echo(diagnoses_page(CATALOG), nl=False)
        return
    out = console(sys.stdout, color)
    if diagnosis_id is None:
        for diagnosis in CATALOG:
            out.print(f"{diagnosis.id}  {diagnosis.title}", highlight=False)
        return
    key = diagnosis_id.upper()
    if key not in BY_ID:
        hint = did_you_mean(key, BY_ID, quoted=False)
        raise click.BadParameter(f"no diagnosis '{diagnosis_id}'{hint} (known: {', '.join(BY_ID)})", param_hint="ID")
    print_diagnosis(out, BY_ID[key], evidence=True)
