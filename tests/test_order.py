"""A verdict does not depend on what ran before it: user modules' state, orders and worker counts."""

from __future__ import annotations

import json
import random
import sys

import jax.numpy as jnp
import numpy as np
import pytest

from gradaudit.model.options import Options
from gradaudit.render.json_report import dump, report_to_json
from gradaudit.service import audit
from gradaudit.sources import module_state
from gradaudit.sources.scenario_files import load_paths
from tests.helpers import ROOT, run_cli, session_cache, write_yaml

STATEFUL = """
import jax
import jax.numpy as jnp
import numpy as np

SEEN = []
SCALE = {"factor": 1.0}
TABLE = np.ones(3, dtype=np.float32)
REF = jax.new_ref(jnp.zeros(3))


def appends(x):
    SEEN.append(1)
    return x * len(SEEN)


def reads_the_list(x):
    return x * (1.0 + len(SEEN))


def scales(x):
    SCALE["factor"] *= 3.0
    return x * TABLE


def reads_the_scale(x):
    return x * SCALE["factor"]


def writes_the_table(x):
    TABLE[:] = 5.0
    return jnp.sin(x)


def reads_the_table(x):
    return x * TABLE


def writes_the_ref(x):
    REF[...] = jnp.full(3, 2.0)
    return x + 1.0


def reads_the_ref(x):
    return x * REF[...] + x
"""

READERS = ("reads_the_list", "reads_the_scale", "reads_the_table", "reads_the_ref")
"""In a freshly imported module each returns its input (an empty list, a factor of one, a table of
ones, a ref of zeros); after its writer ran in the same process, 2x, 3x, 5x or 3x it."""


@pytest.fixture
def stateful_suite(tmp_path):
    (tmp_path / "stateful_fns.py").write_text(STATEFUL, encoding="utf-8")
    names = [
        "appends",
        "reads_the_list",
        "scales",
        "reads_the_scale",
        "writes_the_table",
        "reads_the_table",
        "writes_the_ref",
        "reads_the_ref",
    ]
    body = "\n".join(
        f"  - name: {n}\n    fn: stateful_fns:{n}\n    inputs:\n      - {{dtype: float32, value: [0.5, -1.0, 2.0]}}\n"
        for n in names
    )
    return write_yaml(tmp_path, "stateful.yaml", "scenarios:\n" + body)


def _readers(report) -> dict[str, tuple]:
    return {
        r.scenario.name: (r.status, tuple(np.asarray(r.paths["value"].arrays[0]).tolist()))
        for r in report.results
        if r.scenario.name in READERS
    }


def test_a_scenario_reads_its_module_as_freshly_imported_whatever_ran_before_it(stateful_suite):
    loaded = load_paths([str(stateful_suite)])
    assert not loaded.errors and len(loaded.scenarios) == 8
    scenarios = loaded.scenarios
    x = [0.5, -1.0, 2.0]
    expected = dict.fromkeys(READERS, ("consistent", tuple(x)))
    # File order (each writer right before its reader), shuffled orders, each in this process.
    writers = set()
    for seed in (None, 3, 11):
        report = audit(scenarios, Options(jobs=0, shuffle=seed, cache=None))
        assert _readers(report) == expected, seed
        # A writer sees its own writes only (the appender's list grows within its scenario: traced
        # for the size limits, then called by each path), the same whatever ran before it.
        writers.add(
            tuple(
                (r.scenario.name, tuple(np.asarray(r.paths["value"].arrays[0]).tolist()))
                for r in report.results
                if r.scenario.name not in READERS
            )
        )
    assert len(writers) == 1
    assert module_state.dropped > 0


def test_the_digest_sees_each_kind_of_state_change_and_nothing_else(tmp_path):
    (tmp_path / "kinds.py").write_text(
        "import functools\nimport numpy as np\nimport jax, jax.numpy as jnp\n"
        "LIST = [1]\nARRAY = np.zeros(2)\nREF = jax.new_ref(jnp.zeros(2))\nRNG = np.random.default_rng(0)\n"
        "class Box:\n    size = 1\n    def __init__(self):\n        self.items = {}\n"
        "BOX = Box()\n"
        "def defaults(x, memo=[]):\n    return x\n"
        "def outer():\n    seen = [0]\n    def inner(x):\n        return x + seen[0]\n    return inner\n"
        "CLOSED = outer()\n"
        "@functools.lru_cache\ndef cached(n):\n    return n * 2\n"
        "JITTED = jax.jit(lambda x: x + 1)\n"
        "import array, itertools\nBATCHES = iter([1, 2, 3])\nCOUNTER = itertools.count()\n"
        "BUFFER = bytearray(2)\nNUMBERS = array.array('d', [0.0])\n"
        "DEEP = ()\nfor _ in range(1500):\n    DEEP = (DEEP,)\n",
        encoding="utf-8",
    )
    sys.path.insert(0, str(tmp_path))
    try:
        import kinds  # type: ignore[import-not-found]  # written above
    finally:
        sys.path.remove(str(tmp_path))
    start = module_state.digest(kinds)
    assert module_state.digest(kinds) == start
    kinds.cached(3)
    kinds.JITTED(jnp.ones(2))
    assert module_state.digest(kinds) == start  # a cache filled or a program compiled is not state
    changes = [
        lambda: kinds.LIST.append(2),
        lambda: kinds.ARRAY.__setitem__(0, 1.0),
        lambda: kinds.REF.__setitem__(..., jnp.ones(2)),
        lambda: kinds.RNG.normal(),
        lambda: kinds.BOX.items.__setitem__("a", 1),
        lambda: setattr(kinds.Box, "size", 2),
        lambda: kinds.defaults.__defaults__[0].append(1),
        lambda: kinds.CLOSED.__closure__[0].cell_contents.__setitem__(0, 5),
        lambda: setattr(kinds, "NEW", 1),
        lambda: next(kinds.BATCHES),
        lambda: next(kinds.COUNTER),
        lambda: kinds.BUFFER.__setitem__(0, 7),
        lambda: kinds.NUMBERS.append(1.0),
    ]
    for change in changes:
        before = module_state.digest(kinds)
        change()
        assert module_state.digest(kinds) != before
    del sys.modules["kinds"]


def test_a_module_that_cannot_be_imported_twice_is_kept_as_it_was_and_later_scenarios_still_run(tmp_path):
    # It makes a type it does not define a pytree: a second import raises (duplicate registration).
    (tmp_path / "registers.py").write_text(
        "import fractions\nimport jax\n\n"
        "jax.tree_util.register_pytree_node(fractions.Fraction, lambda f: ((), (f.numerator, f.denominator)), "
        "lambda aux, _: fractions.Fraction(*aux))\n"
        "CALLS = []\n\n\ndef f(x):\n    CALLS.append(1)\n    return x * 2.0\n",
        encoding="utf-8",
    )
    # A neighbour whose state a scenario writes, dropped with it: it alone is kept as it was, the
    # neighbour is still imported afresh for each scenario (its reader sees the factor at one).
    (tmp_path / "stateful_fns.py").write_text(STATEFUL, encoding="utf-8")
    registers = [
        f"  - {{name: s{i}, fn: 'registers:f', inputs: [{{dtype: float32, value: {i}.0}}]}}\n" for i in range(3)
    ]
    neighbour = [
        f"  - {{name: {name}, fn: 'stateful_fns:{name}', inputs: [{{dtype: float32, value: [0.5, -1.0, 2.0]}}]}}\n"
        for name in ("scales", "reads_the_scale")
    ]
    path = write_yaml(tmp_path, "s.yaml", "scenarios:\n" + "".join(neighbour[:1] + registers + neighbour[1:]))
    try:
        report = audit(load_paths([str(path)]).scenarios, Options(jobs=0, literal=True, cache=None))
        assert [str(r.status) for r in report.results] == ["consistent"] * 5
        assert "registers" in module_state.unimportable and "stateful_fns" not in module_state.unimportable
        assert _readers(report) == {"reads_the_scale": ("consistent", (0.5, -1.0, 2.0))}
    finally:
        for name in ("registers", "stateful_fns"):
            sys.modules.pop(name, None)


def test_neighbours_of_one_name_in_two_folders_stay_each_their_folders_after_a_fresh_import(tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "helpers.py").write_text(f"WHO = {ord(folder)}.0\n", encoding="utf-8")
        (tmp_path / folder / f"uses_{folder}.py").write_text(
            "from helpers import WHO\n\nCALLS = []\n\n\ndef f(x):\n    CALLS.append(1)\n    return x * WHO\n",
            encoding="utf-8",
        )
    write_yaml(
        tmp_path / "a",
        "s.yaml",
        "scenarios:\n"
        "  - {name: a1, fn: 'uses_a:f', inputs: [{dtype: float32, value: 1.0}]}\n"
        "  - {name: a2, fn: 'uses_a:f', inputs: [{dtype: float32, value: 1.0}]}\n",
    )
    write_yaml(
        tmp_path / "b", "s.yaml", "scenarios:\n  - {name: b1, fn: 'uses_b:f', inputs: [{dtype: float32, value: 1.0}]}\n"
    )
    try:
        loaded = load_paths([str(tmp_path / "a" / "s.yaml"), str(tmp_path / "b" / "s.yaml")])
        report = audit(
            loaded.scenarios, Options(jobs=0, literal=True, cache=None)
        )  # a1 writes CALLS: a2 imports afresh
        values = {r.scenario.name: float(np.asarray(r.paths["value"].arrays[0])) for r in report.results}
        # b's folder went on the path after a's (its file loaded later): a2's fresh import still finds a's `helpers`.
        assert (values["a1"], values["a2"]) == (ord("a"), ord("a"))
    finally:
        for name in ("helpers", "uses_a", "uses_b"):
            sys.modules.pop(name, None)


def test_a_module_imported_from_a_folder_above_stays_tracked_when_a_folder_below_is_first_used(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "net.py").write_text(
        "SEEN = []\n\n\ndef f(x):\n    SEEN.append(1)\n    return x * len(SEEN)\n", encoding="utf-8"
    )
    above = write_yaml(
        tmp_path,
        "a.yaml",
        "scenarios:\n"
        + "".join(
            f"  - {{name: a{i}, fn: 'models.net:f', inputs: [{{dtype: float32, value: 1.0}}]}}\n" for i in range(2)
        ),
    )
    below = write_yaml(
        tmp_path / "models",
        "b.yaml",
        "scenarios:\n  - {name: b, fn: 'net:f', inputs: [{dtype: float32, value: 1.0}]}\n",
    )
    try:
        loaded = load_paths(
            [str(above), str(below)]
        )  # models.net imported from tmp_path, then the folder below is a root
        report = audit(
            [loaded.scenarios[0], loaded.scenarios[2], loaded.scenarios[1]], Options(jobs=0, literal=True, cache=None)
        )
        values = {r.scenario.name: float(np.asarray(r.paths["value"].arrays[0])) for r in report.results}
        first = values["a0"]
        assert values["a1"] == first  # as freshly imported, whatever a0 appended
    finally:
        for name in ("models", "models.net", "net"):
            sys.modules.pop(name, None)


def test_the_global_random_generators_are_put_back_before_each_scenario(stateful_suite):
    audit(
        load_paths([str(stateful_suite)]).scenarios[:1], Options(jobs=0, cache=None)
    )  # a suite's module imported: tracking starts
    module_state.fresh()
    first = (random.random(), np.random.random())
    module_state.fresh()
    assert (random.random(), np.random.random()) == first


def _comparable(report: dict) -> dict:
    """A report with what may differ between runs taken out: timings, the order and worker count."""
    for result in report["results"]:
        result.pop("seconds")
    report.pop("shuffle")
    report.pop("files")  # the shared run was given scenarios, not files
    report["environment"] = {k: v for k, v in report["environment"].items() if k not in ("jobs", "workers")}
    return report


@pytest.mark.slow
def test_the_catalog_gives_one_report_in_any_order_with_any_number_of_workers(catalog_report):
    """The shared catalog run (file order, in a test process) against shuffled runs in one and two worker processes."""
    reference = _comparable(json.loads(dump(report_to_json(catalog_report, "full"))))
    for jobs, seed in ((1, 5), (2, 9)):
        run = run_cli(
            "run",
            str(ROOT / "scenarios"),
            "--rule",
            "legacy",
            "--jobs",
            str(jobs),
            "--shuffle",
            str(seed),
            "--json",
            "-",
            "--json-detail",
            "full",
            *session_cache(),
            "-q",
        )
        assert run.exit_code == 1, run.stderr
        assert _differences(_comparable(run.json()), reference) == [], (jobs, seed)


def _differences(got, expected, where: str = "") -> list[str]:
    """Where two JSON reports differ, as `results[name].field: got != expected` lines (results keyed by name)."""
    if isinstance(got, dict) and isinstance(expected, dict):
        return [
            line
            for key in sorted(set(got) | set(expected))
            for line in _differences(got.get(key), expected.get(key), f"{where}.{key}")
        ]
    if isinstance(got, list) and isinstance(expected, list) and where == ".results":
        return _differences({r["name"]: r for r in got}, {r["name"]: r for r in expected}, where)
    if isinstance(got, list) and isinstance(expected, list) and len(got) == len(expected):
        return [
            line
            for i, (g, e) in enumerate(zip(got, expected, strict=True))
            for line in _differences(g, e, f"{where}[{i}]")
        ]
    return [] if got == expected else [f"{where}: {got!r:.200} != {expected!r:.200}"]


def test_a_lazily_imported_neighbour_counts_as_the_users(tmp_path):
    write_yaml(
        tmp_path,
        "lazy.yaml",
        "scenarios:\n  - name: lazy\n    fn: lazy_fns:uses_helper\n    inputs:\n"
        "      - {dtype: float32, value: [1.0]}\n",
    )
    (tmp_path / "lazy_fns.py").write_text(
        "def uses_helper(x):\n    import lazy_helper\n    lazy_helper.CALLS.append(1)\n"
        "    return x * len(lazy_helper.CALLS)\n",
        encoding="utf-8",
    )
    (tmp_path / "lazy_helper.py").write_text("CALLS = []\n", encoding="utf-8")
    scenarios = load_paths([str(tmp_path / "lazy.yaml")]).scenarios
    values = [
        np.asarray(audit(scenarios, Options(jobs=0, cache=None)).results[0].paths["value"].arrays[0]).tolist()
        for _ in range(3)
    ]
    assert (
        values[0] == values[1] == values[2]
    )  # the helper as freshly imported each time, not a list grown by the audits before


def test_a_float64_scenario_among_float32_ones_of_a_function_with_a_numpy_table_is_judged_as_alone(tmp_path):
    # A module's float64 table (jax.scipy.special.owens_t keeps its quadrature weights so): traced under
    # x64 off for the float32 scenario's jit paths, it reached the float64 scenario's eager paths at the
    # other width, and JAX raised RuntimeProgramInputMismatch, filed as the function's error.
    (tmp_path / "tabled.py").write_text(
        "import jax.numpy as jnp\nimport numpy as np\n\nWEIGHTS = np.linspace(0.5, 1.5, 5)\n\n\n"
        "def weighted(x):\n    return jnp.sin(x)[:, None] * jnp.cos(WEIGHTS)[None, :]\n",
        encoding="utf-8",
    )
    calls = [
        f"  - {{name: {name}, fn: 'tabled:weighted', inputs: [{{dtype: {dtype}, value: [0.1, 0.7]}}]}}\n"
        for name, dtype in (("narrow", "float32"), ("wide", "float64"), ("narrow_again", "float32"))
    ]
    path = write_yaml(tmp_path, "s.yaml", "scenarios:\n" + "".join(calls))
    try:
        report = audit(load_paths([str(path)]).scenarios, Options(jobs=0, cache=None))
    finally:
        sys.modules.pop("tabled", None)
    assert [(r.scenario.name, str(r.status), r.findings) for r in report.results] == [
        (name, "consistent", ()) for name in ("narrow", "wide", "narrow_again")
    ]
