"""State a scenario could leave behind for the next one: users' modules and the global random generators.

A user's module may keep state (a module-level `jax.new_ref`, a list it appends to, a counter, a
random generator) that one scenario writes and a later one reads, so a verdict would depend on the
order scenarios run in and on which of them share a worker. Before each scenario, or group of
scenarios computed as one call, the engines call `fresh()`: every user module's state is compared
with the state it had when imported, and if any changed, all user modules are dropped, so that
resolving a function imports them afresh, as a new process would. Python's and NumPy's global
random generators are put back as they were first seen.

Comparing costs a walk over the modules' globals (arrays hashed); importing again costs the JAX
programs traced for those modules' functions, paid only after a scenario changed some state.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import random
import sys
import types
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

MOST_OBJECTS = 100_000
"""Objects the walk of one module visits at most; past it the digest stops growing (state deeper
than that goes unseen)."""

DEEPEST = 100
"""Levels the walk follows from a module's globals; deeper state goes unseen (a cons list 1,500
levels deep must not cost a RecursionError)."""

_roots: set[str] = set()
_foreign: set[str] = set()
"""Modules under a root that were loaded before gradaudit first imported from it."""
_pristine: dict[str, bytes] = {}
"""Module name -> digest of its state when first seen after importing."""
_known: tuple[int, list[str]] = (-1, [])
"""(len(sys.modules), the user modules' names) as last counted."""
_lazy: set[str] = set()
"""User modules first seen after a scenario ran (imported by a user's function): imported with the
module that is resolved, so that their state when fresh is known."""
_kept: dict[str, types.ModuleType] = {}
"""The modules last dropped, until they are imported again: put back where importing again fails."""
_generators: tuple | None = None
"""Python's and NumPy's global random states as first seen."""
dropped = 0
"""How many times user modules were dropped for a fresh import (a test and the profile read it)."""
unimportable: set[str] = set()
"""User modules that could not be imported a second time, kept as they were (see `put_back`)."""


@contextmanager
def importing(root: str | Path) -> Iterator[None]:
    """Around importing a user's module from `root` (a scenario file's folder): modules under `root`
    that were loaded before gradaudit first imported from it (the user's own tests, a conftest)
    are not its to drop; those imported now have their state remembered as it is after importing."""
    global _generators
    folder = str(Path(root).resolve())
    if folder not in _roots:
        # Not those gradaudit imported from another root (a folder above this one) or dropped.
        _foreign.update(name for name in _under_roots((folder,)) if name not in _pristine and name not in _kept)
        _roots.add(folder)
    if _generators is None:
        _generators = (random.getstate(), np.random.get_state())
    try:
        yield
    finally:
        for name in sorted(_lazy.difference(sys.modules)):
            try:
                importlib.import_module(name)
            # it will fail again where the user's function imports it, and say so there
            except (Exception, SystemExit):  # noqa: BLE001
                _lazy.discard(name)
        for name in _user_modules():
            if name not in _pristine:
                _pristine[name] = digest(sys.modules[name])
                _kept.pop(name, None)


def put_back(name: str, file: Path | None = None) -> bool:
    """After importing `name` (from `file`) again failed: it, and the packages above it that did not
    import either, back as they were, state and all, and never dropped again (a module that registers
    a pytree for a type it does not define, an FFI target or a config option can be imported once per
    process). Only those: the other modules dropped with them are imported afresh when asked for, so
    one module that cannot be imported twice does not keep every other module's state from one
    scenario to the next. True if there were any."""
    parts = name.split(".")
    chain = {".".join(parts[: k + 1]) for k in range(len(parts))}
    back = [
        kept
        for kept, module in _kept.items()
        if kept not in sys.modules and (kept in chain or (file is not None and _file_of(module) == file))
    ]
    for kept in back:
        sys.modules[kept] = _kept.pop(kept)
        _foreign.add(kept)
        _lazy.discard(kept)
        unimportable.add(kept)
    return bool(back)


def _file_of(module: types.ModuleType) -> Path | None:
    file = getattr(module, "__file__", None)
    return Path(file).resolve() if isinstance(file, str) else None


def fresh() -> bool:
    """Put every user module and the global random generators back as freshly imported; True
    when modules had to be dropped (a later `resolve` imports them again)."""
    global dropped
    if not _roots:
        return False
    assert _generators is not None, "importing() sets the generators with the first root"
    random.setstate(_generators[0])
    np.random.set_state(_generators[1])
    names = _user_modules()
    # A module a user's function imported while it ran (a lazy import) may have changed since:
    # its fresh state is unknown, so it counts as changed, and is imported with the others next time.
    unseen = [name for name in names if name not in _pristine]
    changed = bool(unseen) or any(digest(sys.modules[name]) != _pristine[name] for name in names)
    if changed:
        _lazy.update(unseen)
        for name in names:
            _kept[name] = sys.modules.pop(name)
            _pristine.pop(name, None)
    dropped += changed
    return changed


def _user_modules() -> list[str]:
    """Names of the loaded user modules: files under a tracked root, neither installed packages,
    gradaudit's own, nor loaded before gradaudit imported from that root."""
    global _known
    if _known[0] != len(sys.modules) or any(name not in sys.modules for name in _known[1]):
        _known = (len(sys.modules), [name for name in _under_roots(_roots) if name not in _foreign])
    return _known[1]


def _under_roots(folders: Iterable[str]) -> list[str]:
    installed = tuple(os.path.join(p, "") for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})
    roots = tuple(os.path.join(r, "") for r in folders)
    names = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if (
            isinstance(file, str)
            and file.startswith(roots)
            and not file.startswith(installed)
            and "site-packages" not in file
            and name.partition(".")[0] != "gradaudit"
        ):
            names.append(name)
    return names


def digest(module: types.ModuleType) -> bytes:
    """A digest of what `module` holds: its globals, followed into containers, arrays (their
    bytes), refs (their values), random generators (their states), functions of user modules (defaults, closures,
    attributes), classes of this module (their attributes) and instances (theirs)."""
    walk = _Walk(module.__name__)
    walk.feed(
        {k: v for k, v in vars(module).items() if not k.startswith("__")}, 0
    )  # __builtins__, __spec__ and the like: the interpreter's
    return walk.hash.digest()


class _Walk:
    def __init__(self, module: str):
        self.hash = hashlib.blake2b(digest_size=16)
        self.module = module
        self.seen: set[int] = set()
        self.kept: list[object] = []
        """Every object walked, held until the walk ends: an array made to read a ref must not
        free its id for another to be taken as seen."""

    def put(self, *parts: object) -> None:
        for part in parts:
            self.hash.update(part if isinstance(part, bytes) else repr(part).encode())
            self.hash.update(b"\0")

    def feed(self, value: object, depth: int) -> None:
        if isinstance(value, (type(None), bool, int, float, complex, str, bytes)):
            self.put(value)
            return
        if id(value) in self.seen or len(self.seen) >= MOST_OBJECTS or depth > DEEPEST:
            self.put("seen" if depth <= DEEPEST else "deeper")
            return
        depth += 1
        self.seen.add(id(value))
        self.kept.append(value)
        kind = type(value)
        self.put(kind.__qualname__)
        if isinstance(value, np.ndarray):
            self.put(
                value.dtype.str,
                value.shape,
                np.ascontiguousarray(value).tobytes() if value.dtype != object else repr(value.tolist()),
            )
        elif isinstance(value, types.ModuleType):
            self.put(value.__name__)
        elif isinstance(value, dict):
            for key, item in list(value.items()):
                self.put(key if isinstance(key, str) else repr(key))
                self.feed(item, depth)
        elif isinstance(value, (list, tuple, set, frozenset)) or kind.__name__ == "deque":
            # every branch is iterable
            ordered = isinstance(value, (set, frozenset))
            items = sorted(value, key=repr) if ordered else list(value)  # type: ignore[call-overload]
            for item in items:
                self.feed(item, depth)
        elif isinstance(value, np.random.Generator):
            self.feed(value.bit_generator.state, depth)
        elif isinstance(value, (np.random.RandomState, random.Random)):
            self.feed(value.get_state() if isinstance(value, np.random.RandomState) else value.getstate(), depth)
        else:
            try:
                self._other(value, depth)
            # an object that cannot be read (a leaked tracer, a closed file): seen as its error, which stays the same
            # while it does
            except Exception as exc:  # noqa: BLE001
                self.put("unreadable", type(exc).__name__)

    def _other(self, value: object, depth: int) -> None:
        kind = type(value)
        if kind.__module__.startswith(("jax", "jaxlib")):
            self._jax(value, depth)
        elif isinstance(value, (types.FunctionType, types.MethodType)):
            self._function(value, depth)
        elif isinstance(value, type):
            if value.__module__ == self.module:
                self.feed({k: v for k, v in vars(value).items() if not k.startswith("__")}, depth)
        else:
            self._object(value, depth)

    def _jax(self, value: object, depth: int) -> None:
        """A JAX array (its values), a ref (the values it holds now), a jitted function (the
        function it wraps); other JAX objects by type alone."""
        if type(value).__name__ == "Ref":
            self.feed(np.asarray(value[...]), depth)  # type: ignore[index]  # a jax Ref reads its value with [...]
        elif hasattr(value, "__array__") and hasattr(value, "dtype") and not _is_tracer(value):
            self.feed(np.asarray(value), depth)
        elif hasattr(value, "__wrapped__"):
            self.feed(value.__wrapped__, depth)

    def _function(self, value, depth: int) -> None:
        function = value.__func__ if isinstance(value, types.MethodType) else value
        if isinstance(value, types.MethodType):
            self.feed(value.__self__, depth)
        if function.__module__ != self.module and not _is_user(function.__module__):
            self.put(function.__module__, function.__qualname__)
            return
        self.feed(function.__defaults__, depth)
        self.feed(function.__kwdefaults__, depth)
        self.feed(function.__dict__, depth)
        for cell in function.__closure__ or ():
            try:
                self.feed(cell.cell_contents, depth)
            except ValueError:  # an empty cell: a name bound later
                self.put("empty")

    def _object(self, value: object, depth: int) -> None:
        """An instance: its attributes (`__dict__` and slots), or, for a wrapper (functools'
        caches, partials), what it wraps."""
        wrapped = getattr(value, "__wrapped__", None) or getattr(value, "func", None)
        if wrapped is not None and callable(wrapped):
            self.feed(wrapped, depth)
            self.feed(getattr(value, "args", None), depth)
            self.feed(getattr(value, "keywords", None), depth)
            return
        attributes = getattr(value, "__dict__", None)
        slots = [
            slot for slot in getattr(type(value), "__slots__", ()) if isinstance(slot, str) and hasattr(value, slot)
        ]
        if isinstance(attributes, dict):
            self.feed(attributes, depth)
        for slot in slots:
            self.feed(getattr(value, slot), depth)
        if not isinstance(attributes, dict) and not slots:
            # A builtin whose state has no attributes (an iterator's position, a bytearray, an
            # array.array, itertools.count): what pickling it would keep.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # pickling itertools objects is deprecated from Python 3.12
                self.feed(value.__reduce_ex__(4), depth)


def _is_tracer(value: object) -> bool:
    return any(k.__name__ == "Tracer" for k in type(value).__mro__)


def _is_user(module_name: str | None) -> bool:
    return module_name is not None and module_name in _known[1]
