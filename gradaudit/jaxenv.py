"""Every global switch of JAX an audit turns, in one place: the select_n transpose rule, x64, the
compilation cache, the devices, traceback filtering, and listening to JAX's compile events.

Each switch is a context manager or a function that says what it changed, so a run leaves JAX as
it found it (the rule and x64 are restored on every exit, exceptions and Ctrl-C included).

The rule variants are written from the seed's description of JAX PR #40814, not taken from JAX:
- `legacy`: case i receives the cotangent where `which == i`; a boolean selector is assumed to
  choose between two cases (so a single case raises IndexError).
- `fixed`: the same, after clamping an integer selector to [0, cases - 1] in its own dtype, and
  with a single case receiving the incoming cotangent directly.
Only the `select_n` entry of JAX's transpose registry is replaced, never an installed file. The rule
in force is a JAX config state that JAX keys its traces and compiled programs on, so no program
traced under one rule serves another, and one rule's programs stay cached while another runs.

The compilation cache keeps XLA's executables under `.gradaudit/cache` (like pytest's and ruff's
caches): an audit is mostly compiling small programs that are the same from one run to the next.
The settings go into the environment too, so worker processes share the cache.
"""

from __future__ import annotations

from gradaudit.supported import require_supported_jax

require_supported_jax()  # first: an unsupported JAX's internals, imported below, may not even import

import os
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TypeVar

import jax
import numpy as np
from jax import lax
from jax._src import ad_util
from jax._src import config as jax_config
from jax._src.interpreters import ad
from jax._src.lax import lax as lax_internal

from gradaudit.model import dtypes
from gradaudit.model.options import BACKENDS, FIXED, INSTALLED, LEGACY, OptionError
from gradaudit.model.scenario import Scenario

T = TypeVar("T")

# --- the select_n transpose rule --------------------------------------------------------------
TransposeRule = Callable[..., object]


def _selector_constant(which, value: int):
    """`value` in the selector's own dtype, so unsigned selectors keep their comparison domain."""
    return np.array(value, dtype=np.dtype(which.dtype))


def _transpose_rule(clamp_selector: bool, single_case_shortcut: bool) -> TransposeRule:
    """A select_n transpose rule: the legacy one, or with PR #40814's two changes switched on."""

    def rule(ct, which, *cases):
        if type(ct) is ad_util.Zero:
            return [None] + [ad_util.Zero(c.aval) if ad.is_undefined_primal(c) else None for c in cases]
        if single_case_shortcut and len(cases) == 1:
            return [None, ct if ad.is_undefined_primal(cases[0]) else None]
        zeros = lax.full_like(ct, 0)
        if np.dtype(which.dtype) == np.bool_:
            ct0 = lax.select(which, zeros, ct) if ad.is_undefined_primal(cases[0]) else None
            ct1 = lax.select(which, ct, zeros) if ad.is_undefined_primal(cases[1]) else None
            return [None, ct0, ct1]
        if clamp_selector:
            which = lax.clamp(_selector_constant(which, 0), which, _selector_constant(which, len(cases) - 1))
        return [None] + [
            lax.select(lax.eq(which, _selector_constant(which, i)), ct, zeros) if ad.is_undefined_primal(case) else None
            for i, case in enumerate(cases)
        ]

    return rule


VARIANTS: dict[str, TransposeRule] = {
    LEGACY: _transpose_rule(clamp_selector=False, single_case_shortcut=False),
    FIXED: _transpose_rule(clamp_selector=True, single_case_shortcut=True),
}


def installed_rule() -> TransposeRule:
    """The select_n transpose rule currently in JAX's registry."""
    return ad.primitive_transposes[lax_internal.select_n_p]


def tracing_context() -> tuple:
    """What decides a trace besides the function and its inputs' shapes and dtypes: the select_n
    rule in force and x64. A cache of programs gradaudit compiles itself keys on it, so a program
    traced under one rule is never run under another (JAX's own caches key on `_RULE_IN_FORCE`)."""
    # Config defines each flag as an attribute at run time
    return (installed_rule(), bool(jax.config.jax_enable_x64))  # type: ignore[attr-defined]


_RULE_IN_FORCE = jax_config.enum_state(
    "gradaudit_select_n_rule",
    [INSTALLED, *VARIANTS],
    INSTALLED,
    help="Which select_n transpose rule gradaudit has put in JAX's registry (gradaudit sets it, never a user).",
    include_in_jit_key=True,
    include_in_trace_context=True,
)
"""Part of JAX's trace context, so JAX's caches (traces, lowerings, compiled programs) key on the rule
in force rather than being cleared each time it changes."""
jax.config.update(_RULE_IN_FORCE.name, INSTALLED)  # whatever GRADAUDIT_SELECT_N_RULE says: the registry is JAX's


@contextmanager
def select_n_rule(rule: str) -> Iterator[None]:
    """Run the body with `rule` as select_n's transpose rule; the original is restored on every exit.

    `installed` changes nothing. For the others, the registry entry and the config state JAX keys
    its caches on change together, and both are put back even on exceptions and KeyboardInterrupt.
    """
    if rule == INSTALLED:
        yield
        return
    registry = ad.primitive_transposes
    original = registry[lax_internal.select_n_p]
    previous = _RULE_IN_FORCE.value
    jax.config.update(_RULE_IN_FORCE.name, rule)
    registry[lax_internal.select_n_p] = VARIANTS[rule]
    try:
        yield
    finally:
        registry[lax_internal.select_n_p] = original
        jax.config.update(_RULE_IN_FORCE.name, previous)


# --- x64 --------------------------------------------------------------------------------------


def needs_x64(scenario: Scenario) -> bool:
    """Whether a scenario names a 64-bit dtype, which JAX only keeps with x64 enabled."""
    return any(dtype in dtypes.WIDE_DTYPES for dtype in scenario.target.named_dtypes)


def x64_for(scenario: Scenario) -> AbstractContextManager[None]:
    """x64 on for a scenario that needs it, and only for it: one scenario never changes another's dtypes."""
    # Config defines each flag as an attribute at run time
    return x64(bool(jax.config.jax_enable_x64) or needs_x64(scenario))  # type: ignore[attr-defined]


@contextmanager
def x64(on: bool) -> Iterator[None]:
    """x64 as `on` for the body, and as it was after it (exceptions and Ctrl-C included)."""
    # Config defines each flag as an attribute at run time
    previous = bool(jax.config.jax_enable_x64)  # type: ignore[attr-defined]
    if on != previous:
        jax.config.update("jax_enable_x64", on)
    try:
        yield
    finally:  # as it was, also where the body (a user's module) switched it
        if bool(jax.config.jax_enable_x64) != previous:  # type: ignore[attr-defined]
            jax.config.update("jax_enable_x64", previous)


STALE_WIDTH = "RuntimeProgramInputMismatch"
"""JAX's runtime error for a program handed a buffer of another size than it was compiled for (E0102)."""


def again_if_stale(compute: Callable[[], T]) -> T:
    """`compute()`, and once more with JAX's caches cleared where it met a buffer of the other x64 width.

    A function closing over a numpy constant (a module's table of weights), traced under one x64
    mode and called eagerly under the other, can be handed the constant as placed under the first
    mode, and JAX raises RuntimeProgramInputMismatch: the process's history of switching x64 (a
    float64 scenario, the float64 referee), not the function. With the caches cleared the call is
    as in a fresh process; an error that comes back is the function's. Clearing makes everything
    after it trace and compile again, so it is done when the error is met, not at every switch."""
    try:
        return compute()
    except Exception as error:  # noqa: BLE001 - only the stale width is retried; anything else is the caller's
        if STALE_WIDTH not in str(error):
            raise
    jax.clear_caches()
    return compute()


@contextmanager
def unfiltered_tracebacks() -> Iterator[None]:
    """JAX hides its own frames from tracebacks; a diagnosis needs the innermost frame, JAX's included."""
    # Config defines each flag as an attribute at run time
    previous = jax.config.jax_traceback_filtering  # type: ignore[attr-defined]
    jax.config.update("jax_traceback_filtering", "off")
    try:
        yield
    finally:
        jax.config.update("jax_traceback_filtering", previous)


# --- the compilation cache --------------------------------------------------------------------
CACHE_FOLDER = Path(".gradaudit") / "cache"

CACHE_SETTINGS: dict[str, str | float | bool | None] = {
    "jax_enable_compilation_cache": True,
    "jax_compilation_cache_dir": None,
    "jax_persistent_cache_min_compile_time_secs": 0.0,
    "jax_persistent_cache_min_entry_size_bytes": -1,
}
"""Every program is cached: the audit's programs compile in milliseconds each, but there are hundreds.
Enabled as well as named: a command before it in this process may have turned the cache off (--no-cache)."""


OLDEST_JAXLIB = (0, 10)
"""jaxlib 0.9 on CPU reloads its own cached programs with an error per program ('Target machine
feature +prefer-no-scatter is not supported on the host machine ... could lead to SIGILL'), so
older releases run without the cache."""


def cache_unsupported() -> str | None:
    """Why this JAX runs without the cache, or None when it can use it."""
    import jaxlib

    release = tuple(int(part) for part in jaxlib.__version__.split(".")[:2] if part.isdigit())
    if release < OLDEST_JAXLIB:
        return (
            f"the compilation cache needs jaxlib {'.'.join(map(str, OLDEST_JAXLIB))} or newer (this is "
            f"{jaxlib.__version__}); running without it"
        )
    return None


def enable_cache(folder: Path) -> str | None:
    """Use `folder` as JAX's compilation cache here and in the workers this process starts.

    Returns why the folder cannot be used (the audit then runs without a cache), or None.
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
        ignore = folder.parent / ".gitignore"
        if folder.parent.name == ".gradaudit" and not ignore.exists():
            ignore.write_text("# created by gradaudit\n*\n", encoding="utf-8")
    except OSError as exc:
        return f"cannot use {folder} as the compilation cache ({exc.strerror or exc}); running without it"
    for name, value in CACHE_SETTINGS.items():
        value = str(folder.resolve()) if value is None else value
        jax.config.update(name, value)
        os.environ[name.upper()] = str(value)
    return None


def as_jax_arrays(arrays: Iterable) -> tuple:
    """NumPy inputs as the JAX arrays a user's `jnp.asarray` makes of them, by `jax.device_put`,
    which compiles nothing (in JAX 0.10 `jnp.asarray` of a NumPy array runs a `stage` program, one
    compilation per shape and dtype)."""
    return tuple(jax.device_put(tuple(arrays)))


def on_host(tree):
    """`tree` with its JAX arrays copied to NumPy, as `jax.device_get` gives them, without the
    asynchronous copies it starts first and waits for: the group engine fetches a few small arrays
    per member, thousands of times a run, where that bookkeeping cost more than the copies."""

    def fetched(leaf):
        if isinstance(leaf, jax.Array) and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            return jax.device_get(leaf)  # a typed key has no NumPy form
        return np.asarray(leaf) if isinstance(leaf, jax.Array | np.generic) else leaf

    return jax.tree.map(fetched, tree)


def cache_config() -> dict[str, object]:
    """JAX's compilation-cache settings in this process, for workers started before it set them."""
    return {name: getattr(jax.config, name) for name in CACHE_SETTINGS}


def use_cache_config(config: dict[str, object]) -> None:
    """Take another process's `cache_config` (before this process compiles anything)."""
    for name, value in config.items():
        jax.config.update(name, value)


# --- devices ----------------------------------------------------------------------------------


class DeviceError(OptionError):
    """The requested backend or devices are not here; the message says what is."""


def device_name(device) -> str:
    """`cpu:0`, `gpu:1`: how reports name a device."""
    return f"{device.platform}:{device.id}"


def describe(device) -> dict:
    return {"platform": device.platform, "kind": device.device_kind, "id": device.id, "name": device_name(device)}


def available_backends() -> list[str]:
    """The backends that initialise on this machine."""

    found = []
    for backend in BACKENDS:
        try:
            jax.devices(backend)
        except RuntimeError:
            continue
        found.append(backend)
    return found


def select_devices(backend: str | None, devices: str | None) -> list:
    """The devices to audit on: `devices` is 'all' or comma-separated ids of `backend`'s devices
    (default: its first device); `backend` defaults to JAX's default backend."""

    backend = backend or jax.default_backend()
    try:
        candidates = jax.devices(backend)
    except RuntimeError:
        here = available_backends()
        raise DeviceError(
            f"backend '{backend}' is not available here; available: {', '.join(here) or 'none'} (devices: "
            f"{', '.join(device_name(d) for b in here for d in jax.devices(b))})"
        ) from None
    if devices is None:
        return [candidates[0]]
    if devices.strip() == "all":
        return list(candidates)
    by_id = {d.id: d for d in candidates}
    chosen = []
    for part in devices.split(","):
        part = part.strip()
        if not (part.isascii() and part.isdigit()) or int(part) not in by_id:
            raise DeviceError(
                f"--devices: {part!r} is not a {backend} device id here; allowed: 'all' or ids among "
                f"{', '.join(str(i) for i in by_id)}, comma-separated"
            )
        if by_id[int(part)] not in chosen:
            chosen.append(by_id[int(part)])
    return chosen


def devices_named(names: Sequence[str]) -> list:
    """Devices from their report names (how worker processes receive the parent's selection)."""

    everything = {device_name(d): d for b in {n.split(":")[0] for n in names} for d in jax.devices(b)}
    return [everything[n] for n in names]


# --- JAX's compile events ---------------------------------------------------------------------

JAX_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
}
CACHE_HIT = "/jax/compilation_cache/cache_hits"


class JaxEvents:
    """Seconds JAX spent tracing, lowering and compiling in this process, programs compiled and
    cache reads, from JAX's monitoring events (listening costs nothing until JAX reports)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.compiled = 0
        self.cached = 0
        self.background = 0.0
        """Seconds of compiling in other threads (the compiled literal path compiles while it traces)."""
        from jax import monitoring

        monitoring.register_event_duration_secs_listener(self._record)
        monitoring.register_event_listener(self._count)

    def _count(self, event: str, **kwargs) -> None:
        self.cached += event == CACHE_HIT

    def _record(self, event: str, duration_secs: float, **kwargs) -> None:
        name = JAX_EVENTS.get(event)
        if name:
            self.seconds[name] += duration_secs
            self.compiled += name == "compile"
            if name == "compile" and threading.current_thread() is not threading.main_thread():
                self.background += duration_secs

    def take(self) -> dict[str, float]:
        """What was recorded since the last take, as plain numbers (what a worker sends its parent)."""
        taken = {**self.seconds, "programs": self.compiled, "cached": self.cached}
        self.seconds, self.compiled, self.cached = defaultdict(float), 0, 0
        return taken
