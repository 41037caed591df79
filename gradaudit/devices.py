"""Which devices an audit runs on (`--backend`, `--devices`), and how reports name them.

XLA lowers and fuses differently per backend and per device, so with more than one device every
AD path also runs on each further device and is compared with the first: a cross-device
difference is a finding like any other.
"""

from __future__ import annotations

from collections.abc import Sequence

BACKENDS = ("cpu", "gpu", "tpu")

DEVICE_SEPARATOR = "@"
"""A path run on a further device is named `jacrev@cpu:1`."""


class DeviceError(Exception):
    """The requested backend or devices are not here; the message says what is."""


def device_name(device) -> str:
    """`cpu:0`, `gpu:1`: how reports name a device."""
    return f"{device.platform}:{device.id}"


def describe(device) -> dict:
    return {"platform": device.platform, "kind": device.device_kind, "id": device.id, "name": device_name(device)}


def available_backends() -> list[str]:
    """The backends that initialise on this machine."""
    import jax

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
    import jax

    backend = backend or jax.default_backend()
    try:
        candidates = jax.devices(backend)
    except RuntimeError:
        here = available_backends()
        raise DeviceError(
            f"backend '{backend}' is not available here; available: {', '.join(here) or 'none'} "
            f"(devices: {', '.join(device_name(d) for b in here for d in jax.devices(b))})"
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


def resolve(names: Sequence[str]) -> list:
    """Devices from their report names (how worker processes receive the parent's selection)."""
    import jax

    everything = {device_name(d): d for b in {n.split(":")[0] for n in names} for d in jax.devices(b)}
    return [everything[n] for n in names]
