"""Import a user's `module:function` with the scenario file's folder importable.

Several catalog folders may hold modules of the same name, so a module already imported from
another folder is loaded again from this one under a private name instead of being reused.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

from gradaudit.model.errors import Location, did_you_mean
from gradaudit.sources import module_state


class FunctionImportError(Exception):
    """Why `module:function` could not be resolved; the message is meant for the user."""


def resolve_checked(spec: str, root: str, user_code: bool) -> None:
    """Check that `spec` resolves from `root` (importing it), or, when user code may not run, refuse
    it without importing anything: FunctionImportError either way, meant for the user."""
    if not user_code:
        raise FunctionImportError(
            f"fn '{spec}' would import and run Python code, and user code is off (--no-user-code, or user_code = "
            "false): function scenarios are refused, select_n scenarios still run"
        )
    resolve(spec, root)


@functools.lru_cache(maxsize=256)
def definition(spec: str, root: str) -> Location | None:
    """Where `module:function` is defined, read from its file beside `root` without importing it (the
    `def`, `class` or assignment of its first name at the module's top level); None for a module
    that is not there (an installed library's) or a name not defined at the top level."""
    module_name, _, name = spec.partition(":")
    file = _module_file(module_name, Path(root)) if module_name and name else None
    if file is None:
        return None
    try:
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
    except (OSError, SyntaxError, ValueError):
        return None
    first = name.split(".")[0]
    for node in tree.body:
        named = (
            [node.name]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            else [t.id for t in getattr(node, "targets", [getattr(node, "target", None)]) if isinstance(t, ast.Name)]
        )
        if first in named:
            return Location(_shown(file), node.lineno, node.col_offset + 1)
    return None


def _shown(file: Path) -> str:
    """A file as reports name it: relative to the working folder where it lies inside it."""
    try:
        return str(file.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(file)


def _module_file(module_name: str, root: Path) -> Path | None:
    base = root.joinpath(*module_name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate.resolve()
    return None


def _import_from(module_name: str, root: Path):
    local = _module_file(module_name, root)
    loaded = sys.modules.get(module_name)
    if local is not None and loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() != local:
        # Same name, another folder: load this folder's file under a name of its own.
        private = f"_gradaudit_{abs(hash(str(local)))}_{module_name.replace('.', '_')}"
        if private not in sys.modules:
            spec = importlib.util.spec_from_file_location(private, local)
            assert spec is not None and spec.loader is not None, (
                "a .py file (all _module_file finds) has a spec with a source loader"
            )
            module = importlib.util.module_from_spec(spec)
            sys.modules[private] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[private]  # as a failed import leaves it: not half made for the next try
                raise
        return sys.modules[private]
    # The folder stays importable: the user's functions may import their neighbours when called.
    # First on the path whenever one of its modules is imported, so that a neighbour's name means
    # this folder's file, imported again or not (another folder may have one of that name too).
    if str(root) in sys.path:
        sys.path.remove(str(root))
    sys.path.insert(0, str(root))
    return importlib.import_module(module_name)


def _imported(module_name: str, root: Path):
    """`module_name` imported from `root`; where importing it again (after `module_state.fresh`
    dropped it) fails, the modules dropped are put back as they were and it is taken from them."""
    try:
        with module_state.importing(root):
            return _import_from(module_name, root)
    except (Exception, SystemExit):
        if not module_state.put_back(module_name, _module_file(module_name, root)):
            raise
    with module_state.importing(root):
        return _import_from(module_name, root)


def _modules_in(folder: Path) -> list[str]:
    """The modules a folder offers: its *.py files and its packages (folders with __init__.py)."""
    if not folder.is_dir():
        return []
    return sorted(
        p.stem if p.suffix == ".py" else p.name
        for p in folder.iterdir()
        if (p.suffix == ".py" and p.is_file()) or (p.is_dir() and (p / "__init__.py").is_file())
    )


def resolve(spec: str, root: str) -> Callable:
    """The callable named by `module:function`, importing `module` with `root` first on the path (where it stays).

    `root` goes on the path as an absolute folder: a relative one would follow the working directory.
    """
    module_name, _, attribute = spec.partition(":")
    try:
        module = _imported(module_name, Path(root).resolve())
    except ModuleNotFoundError as exc:
        near = exc.name in (None, module_name.split(".")[0])
        hint = did_you_mean(exc.name or module_name, _modules_in(Path(root)), 3) if near else ""
        raise FunctionImportError(f"cannot import module '{module_name}': {exc}{hint}") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's module failed (or exited) while importing
        raise FunctionImportError(f"importing '{module_name}' raised {type(exc).__name__}: {exc}") from None
    value = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            public = sorted(n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n)))
            hint = did_you_mean(part, public, 3)
            raise FunctionImportError(f"module '{module_name}' has no function '{attribute}'{hint}")
        value = getattr(value, part)
    if not callable(value):
        raise FunctionImportError(f"'{spec}' is not callable (it is a {type(value).__name__})")
    return value
