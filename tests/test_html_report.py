"""The HTML report (`--html PATH`): a self-contained page with the findings and their pictures,
opened in headless Chromium where one is installed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from gradaudit.model.findings import Provenance
from gradaudit.model.results import AuditReport, ScenarioResult
from gradaudit.render.html_report import report_html, survey_html
from gradaudit.render.pictures import MAX_SIDE
from tests.helpers import ROOT, WRONG_SLOPE, make_scenario, path_results, run_cli, write_yaml

SEED = ROOT / "scenarios" / "select_n"
BROWSERS = ("chromium", "chromium-headless-shell", "google-chrome", "chromium-browser")


class Page(HTMLParser):
    """The elements a test looks for: every svg (its attributes, rects and text), every element's attributes."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.svgs: list[dict] = []
        self.elements: list[tuple[str, dict]] = []
        self._svg: dict | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attributes = {key: value or "" for key, value in attrs}
        self.elements.append((tag, attributes))
        if tag == "svg":
            self._svg = {"attrs": attributes, "rects": [], "text": ""}
            self.svgs.append(self._svg)
        elif tag == "rect" and self._svg is not None:
            self._svg["rects"].append(attributes)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        if tag == "svg":
            self._svg = None

    def handle_data(self, data):
        if self._svg is not None:
            self._svg["text"] += data

    def svgs_of(self, cls: str, **data: str) -> list[dict]:
        return [
            s
            for s in self.svgs
            if cls in s["attrs"].get("class", "").split()
            and all(s["attrs"].get(f"data-{k}") == v for k, v in data.items())
        ]

    def with_class(self, tag: str, cls: str) -> list[dict]:
        return [a for t, a in self.elements if t == tag and cls in a.get("class", "").split()]


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    """The seed suite audited once (legacy rule: the same 11 failing scenarios on every supported JAX), \
as HTML and JSON."""
    folder = tmp_path_factory.mktemp("seed")
    html, report = folder / "out.html", folder / "report.json"
    result = run_cli("run", str(SEED), "--rule", "legacy", "--html", str(html), "--json", str(report), "-q")
    assert result.exit_code == 1, result.stdout + result.stderr
    document = json.loads(report.read_text())
    failing = [row["name"] for row in document["results"] if row["status"] != "consistent"]
    return html, failing, document


def test_the_seed_page_holds_every_failing_scenario_with_its_pictures(seed):
    html, failing, document = seed
    assert len(failing) == 11 and document["summary"] == {"total": 17, "consistent": 6, "mismatch": 9, "error": 2}
    page = Page(html.read_text(encoding="utf-8"))
    sections = {a["data-scenario"]: a["data-status"] for a in page.with_class("article", "scenario")}
    assert sections == {row["name"]: row["status"] for row in document["results"] if row["status"] != "consistent"}
    for name in failing:
        assert page.svgs_of("heatmap", scenario=name, kind="jacobian"), name
        assert page.svgs_of("routing", scenario=name), name
    # A mismatch's difference map against finite differences; jacrev is on the wrong side of it.
    above = page.svgs_of("diffmap", scenario="int32-above-two-cases")
    assert above and all(s["attrs"]["data-reference"] == "finite_difference" for s in above)
    assert any("jacrev" in s["attrs"]["data-path"].split() for s in above)
    routed = page.svgs_of("routing", scenario="int32-above-two-cases")[0]
    assert any("wrong" in r.get("class", "").split() for r in routed["rects"])
    text = html.read_text(encoding="utf-8")
    assert "6 consistent scenarios" in text and "GA0" in text and "lax.select_n" in text


def test_the_page_is_self_contained(seed):
    text = seed[0].read_text(encoding="utf-8")
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert (
        not re.search(r"<script[^>]*\bsrc=", text)
        and not re.search(r"<link[^>]*stylesheet", text)
        and "@import" not in text
    )
    assert not re.search(r"""\b(src|srcset|data|poster|action)\s*=\s*["']?\s*(https?:)?//""", text)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", text)
    for match in re.finditer(r"""<(\w+)[^>]*\bhref\s*=\s*["']?(https?:)?//""", text):
        assert match.group(1) == "a", match.group(0)  # plain links to read on, never something the page loads


def test_large_jacobians_are_downsampled_keeping_the_worst_entries(tmp_path):
    n = 300
    eye = np.eye(n, dtype=np.float32)
    wrong = eye.copy()
    wrong[150, 150] = np.nan
    wrong[10, 200] = 7.0
    scenario = make_scenario(cases=1, shape=(n,), name="big")
    paths = path_results({"value": [np.zeros(n)], "jacfwd": [eye], "jacrev": [wrong], "finite_difference": [eye]})
    routes = tuple((0,) for _ in range(n))
    provenance = Provenance(output_shape=(n,), value_from=routes, routes={"jacfwd": routes, "jacrev": routes})
    result = ScenarioResult(
        scenario, ("case 0",), (np.zeros(n, dtype=np.float32),), "mismatch", paths, (), provenance, 0.0
    )
    page = Page("".join(report_html(AuditReport(environment={}, results=(result,)))))
    heatmaps = page.svgs_of("heatmap", scenario="big")
    assert {s["attrs"]["data-path"] for s in heatmaps if s["attrs"]["data-kind"] == "jacobian"} == {
        "finite_difference jacfwd",
        "jacrev",
    }
    for svg in heatmaps:
        assert "downsampled" in svg["attrs"]["class"].split() and "downsampled" in svg["text"], svg["attrs"]
        assert int(svg["attrs"]["data-rows"]) <= MAX_SIDE and int(svg["attrs"]["data-cols"]) <= MAX_SIDE
        assert len(svg["rects"]) <= MAX_SIDE * MAX_SIDE + 2 and svg["attrs"]["data-entries"] == f"{n}x{n}"
    rev = next(s for s in heatmaps if s["attrs"]["data-path"] == "jacrev" and s["attrs"]["data-kind"] == "jacobian")
    classes = {r.get("class") for r in rev["rects"]}
    assert {"nan", "p8"} <= classes  # the NaN and the 7.0 survive pooling among ones and zeros
    difference = page.svgs_of("diffmap", scenario="big", path="jacrev")
    assert difference and {"nan", "p8"} <= {r.get("class") for r in difference[0]["rects"]}
    assert page.svgs_of("routing", scenario="big")[0]["attrs"]["data-elements"] == str(n)


def test_a_hessian_is_drawn_like_a_jacobian():
    scenario = make_scenario(cases=2, shape=(), name="curved", order=2)
    paths = path_results(
        {
            "value": [1.0],
            "jacfwd": [1.0, 2.0],
            "finite_difference": [1.0, 2.0],
            "jit_jacfwd_jacrev": [2.0, 0.0, 0.0, 2.0],
            "jacrev_jacrev": [2.0, 0.0, 0.0, 0.0],
            "finite_difference_jacobian": [2.0, 0.0, 0.0, 2.0],
        }
    )
    result = ScenarioResult(
        scenario, ("case 0", "case 1"), (np.float32(1.0), np.float32(2.0)), "mismatch", paths, (), None, 0.0
    )
    page = Page("".join(report_html(AuditReport(environment={}, results=(result,)))))
    hessians = page.svgs_of("heatmap", scenario="curved", kind="hessian")
    assert {s["attrs"]["data-path"] for s in hessians} == {
        "finite_difference_jacobian jit_jacfwd_jacrev",
        "jacrev_jacrev",
    }
    assert all(s["attrs"]["data-rows"] == "2" and s["attrs"]["data-cols"] == "2" for s in hessians)
    assert page.svgs_of("diffmap", scenario="curved", path="jacrev_jacrev", reference="finite_difference_jacobian")


def test_a_survey_page_links_each_matrix_cell_to_its_findings():
    scenario = make_scenario(name="lax.select_n-1")
    paths = path_results({"value": [5.0], "jacfwd": [0.0, 1.0], "jacrev": [0.0, 0.0], "finite_difference": [0.0, 1.0]})
    result = ScenarioResult(
        scenario, ("case 0", "case 1"), (np.float32(2.0), np.float32(5.0)), "mismatch", paths, (), None, 0.0
    )
    kind = {
        "status": "mismatch",
        "signatures": ["routing:jacrev"],
        "shrunk": True,
        "swept": False,
        "file": "found/lax.select_n-1.yaml",
        "findings": [{"fingerprint": "f", "message": "sends it nowhere"}],
    }
    document = {
        "schema": "gradaudit.survey/1",
        "environment": {"jax": "0.10.2", "rule": "legacy"},
        "budget": 2,
        "seed": 0,
        "functions": [
            {
                "name": "lax.select_n",
                "function": "jax.lax.select_n",
                "audited": 29,
                "skipped": {},
                "problem": None,
                "worst": "mismatch",
                "kinds": [kind],
                "unconfirmed": 0,
            },
            {
                "name": "numpy.sin",
                "function": "jax.numpy.sin",
                "audited": 15,
                "skipped": {},
                "not_audited": {"input 1, large": 40, "input 1, small": 2},
                "problem": None,
                "worst": "consistent",
                "kinds": [],
                "unconfirmed": 0,
            },
        ],
    }
    html = "".join(survey_html(document, {"found/lax.select_n-1.yaml": result}))
    page = Page(html)
    cells = page.with_class("td", "cell")
    assert "not audited</th>" in html and '<td class="num">42</td>' in html  # numpy.sin's left out, summed
    assert {(c["data-function"], c["data-dtype"]) for c in cells} == {
        (f, d) for f in ("lax.select_n", "numpy.sin") for d in ("float16", "bfloat16", "float32", "float64")
    }
    hit = [c for c in cells if c["data-status"] == "mismatch"]
    assert [(c["data-function"], c["data-dtype"]) for c in hit] == [("lax.select_n", "float32")]
    links = [a["href"] for t, a in page.elements if t == "a" and a.get("href", "").startswith("#k")]
    targets = {a["id"] for _, a in page.elements if "id" in a}
    assert links and all(link[1:] in targets for link in links)
    assert page.svgs_of("heatmap", scenario="lax.select_n-1") and page.svgs_of(
        "diffmap", scenario="lax.select_n-1", path="jacrev"
    )


def test_survey_and_compare_write_pages(tmp_path):
    survey = run_cli(
        "survey", "jax.numpy.sin", "--budget", "2", "--out", str(tmp_path / "found"), "--html", str(tmp_path / "s.html")
    )
    assert survey.exit_code in (0, 1), survey.stdout + survey.stderr
    page = Page((tmp_path / "s.html").read_text(encoding="utf-8"))
    assert {c["data-function"] for c in page.with_class("td", "cell")} == {"numpy.sin"}
    compare = run_cli(
        "compare",
        str(SEED / "representative.yaml"),
        "--rules",
        "legacy",
        "fixed",
        "--html",
        str(tmp_path / "c.html"),
        "-q",
    )
    assert compare.exit_code == 0, compare.stdout + compare.stderr
    page = Page((tmp_path / "c.html").read_text(encoding="utf-8"))
    changed = [a for _, a in page.elements if "changed" in a.get("class", "").split()]
    assert len(changed) == 4  # three mismatches and the IndexError, all consistent under the fixed rule
    assert page.svgs_of("diffmap", scenario="int32-above-two-cases", rule="legacy")
    assert page.svgs_of("heatmap", scenario="int32-above-two-cases", rule="fixed")
    refused = run_cli("run", str(SEED / "representative.yaml"), "--html", "-")
    assert refused.exit_code == 2 and "--html" in refused.stderr


def test_the_commands_that_audit_nothing_import_no_jinja2(tmp_path):
    code = textwrap.dedent(
        """
        import sys
        from gradaudit.cli import main
        try:
            main(["run", "--help"])
        except SystemExit:
            pass
        assert "jinja2" not in sys.modules and "gradaudit.render.html_report" not in sys.modules
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def _chromium() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(
        "no Chromium found (looked for chromium, chromium-headless-shell, google-chrome): "
        "install Debian's chromium (apt-get install chromium) to run the browser test"
    )


def _browse(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    command = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=180)


def test_the_seed_page_opens_in_headless_chromium(seed, tmp_path):
    chromium = _chromium()
    html, failing, _ = seed
    url = html.resolve().as_uri()
    dumped = _browse(chromium, tmp_path / "profile", "--virtual-time-budget=5000", "--dump-dom", url)
    assert dumped.returncode == 0, dumped.stderr[-3000:]
    console = [line for line in dumped.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not console, "the page wrote to the console:\n" + "\n".join(
        console
    )  # the page logs nothing: any message is an error
    page = Page(dumped.stdout)
    assert page.elements and page.elements[0][1].get("data-script") == "ran"  # its script ran to the end
    rendered = {a["data-scenario"] for a in page.with_class("article", "scenario")}
    assert set(failing) == rendered and len(failing) == 11
    for name in failing:
        assert page.svgs_of("heatmap", scenario=name), f"no heatmap for {name} in the rendered page"
    screenshot = tmp_path / "seed.png"
    shot = _browse(
        chromium,
        tmp_path / "profile",
        "--hide-scrollbars",
        f"--screenshot={screenshot}",
        "--window-size=1400,2000",
        url,
    )
    assert shot.returncode == 0 and screenshot.is_file(), shot.stderr[-3000:]
    data = screenshot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000


@pytest.mark.slow
def test_a_survey_that_finds_kinds_links_them_from_its_matrix(legacy_survey):
    found, folder = legacy_survey
    assert found.exit_code == 1, found.stdout + found.stderr
    document = json.loads((folder / "survey.json").read_text())
    kinds = sum(len(f["kinds"]) for f in document["functions"])
    page = Page((folder / "survey.html").read_text(encoding="utf-8"))
    links = [a["href"] for t, a in page.elements if t == "a" and a.get("href", "").startswith("#k")]
    # each kind from its matrix cell, and each defect from the defects table to its plainest kind
    assert kinds and len(links) == kinds + len(document["defects"])
    assert len(page.with_class("article", "kind")) == kinds and page.svgs_of("heatmap")


def test_a_function_with_a_300_by_300_jacobian_audits_into_a_downsampled_page(tmp_path):
    write_yaml(tmp_path, "wrong.py", WRONG_SLOPE)
    write_yaml(
        tmp_path,
        "big.yaml",
        "scenarios:\n  - name: wide\n    fn: wrong:double_slope\n"
        "    inputs: [{dtype: float32, shape: [300], fill: normal}]\n",
    )
    result = run_cli("run", str(tmp_path / "big.yaml"), "--html", str(tmp_path / "big.html"), "-q")
    assert result.exit_code == 1, result.stdout + result.stderr
    page = Page((tmp_path / "big.html").read_text(encoding="utf-8"))
    heatmaps = page.svgs_of("heatmap", scenario="wide")
    assert heatmaps and all(s["attrs"]["data-entries"] == "300x300" and "downsampled" in s["text"] for s in heatmaps)
    assert all(len(s["rects"]) <= MAX_SIDE * MAX_SIDE + 2 for s in heatmaps)


def test_pictures_draw_the_judges_comparison_at_a_kink_and_with_the_runs_tolerance():
    import jax
    import jax.numpy as jnp
    from jax import lax

    import gradaudit

    @jax.custom_jvp
    def sine(x):
        return jnp.sin(x)

    sine.defjvp(lambda p, t: (sine(p[0]), t[0] * jnp.cos(p[0]) * 1.02))  # 2% off: within the run's rtol of 5%

    def three(x, y):
        # element 0 at a tie (a kink: finite differences say 1/2 and 1/2, AD 0 and 1); element 1 a
        # selector past the last case (before #40814 jacrev sends its derivative nowhere); element 2
        # a rule 2% off, which the run's tolerance allows
        return jnp.stack([jnp.where(x > y, x, y), lax.select_n(jnp.int32(2), x, y), sine(x)])

    result = gradaudit.audit(three, jnp.float32(1.0), jnp.float32(1.0), rule="legacy", rtol=0.05, name="three")
    assert result.status == "mismatch", str(result)
    page = Page("".join(report_html(result.report)))
    # only jacrev is drawn as differing from finite differences, and only its element 1 is outlined
    drawn = {s["attrs"]["data-path"] for s in page.svgs_of("diffmap", scenario="three")}
    assert drawn == {"jacrev jit_jacrev"}, drawn
    (routed,) = page.svgs_of("routing", scenario="three")
    outlined = [r for r in routed["rects"] if "wrong" in r.get("class", "").split()]
    assert len(outlined) == 1, outlined
