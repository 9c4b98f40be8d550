"""CPU time the hypervisor took from this virtual machine while a benchmark ran.

On a shared VM, "steal" (the 8th field of /proc/stat's `cpu` line) is time the host gave this
guest's CPUs to someone else: every wall-clock figure of that run is inflated by it, whatever the
code does. The benchmarks print it beside their results so runs can be compared honestly.
"""

from __future__ import annotations

from pathlib import Path


def _ticks() -> tuple[int, int] | None:
    """(steal, total) clock ticks of all CPUs since boot; None where /proc/stat is missing."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    values = [int(v) for v in fields[1:9]]
    return values[7], sum(values)


class Steal:
    """Started at construction; `percent()` is the share of CPU time stolen since then."""

    def __init__(self) -> None:
        self._start = _ticks()

    def percent(self) -> float | None:
        end = _ticks()
        if self._start is None or end is None or end[1] == self._start[1]:
            return None
        return 100 * (end[0] - self._start[0]) / (end[1] - self._start[1])

    def describe(self) -> str:
        value = self.percent()
        if value is None:
            return "CPU steal: unknown (no /proc/stat)"
        return f"CPU stolen by the hypervisor during the run: {value:.0f}% (inflates every figure)"
