"""``make bench``: run every benchmark and write BENCHMARKS.md (ratios against same-run baselines)."""

from __future__ import annotations

import argparse
import importlib
import traceback
from datetime import UTC, datetime
from pathlib import Path

from bench.common import ROOT, Result, machine

SUITE = ["definitions_load", "partition_overhead", "backfill", "writes", "observer_tick", "automation_tick"]


def render(results: list[Result], failures: dict[str, str]) -> str:
    lines = [
        "# Benchmarks",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {machine()} by `make bench`.",
        "Every figure is a ratio against a baseline measured in the same run; absolute seconds beside it.",
        "",
        "| benchmark | case | seconds | baseline | baseline seconds | ratio | target | met |",
        "|---|---|---:|---|---:|---:|---|---|",
    ]
    for r in results:
        met = "" if r.met is None else ("yes" if r.met else "**no**")
        lines.append(
            f"| {r.benchmark} | {r.case} | {r.seconds:.3f} | {r.baseline} | {r.baseline_seconds:.3f} | "
            f"{r.ratio:.2f} | {r.target} | {met} |"
        )
    if failures:
        lines += ["", "## Not measured", ""]
        lines += [f"- `{name}`: {reason}" for name, reason in failures.items()]
    notes = ROOT / "bench" / "FINDINGS.md"
    if notes.exists():
        lines += ["", notes.read_text().strip()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", default=SUITE)
    parser.add_argument("--output", type=Path, default=ROOT / "BENCHMARKS.md")
    args = parser.parse_args()
    results: list[Result] = []
    failures: dict[str, str] = {}
    for name in args.only:
        try:
            module = importlib.import_module(f"bench.{name}")
        except ModuleNotFoundError as exc:
            failures[name] = f"not available: {exc}"
            continue
        try:
            results += module.run()
            print(f"{name}: done")
        except Exception as exc:
            failures[name] = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
    args.output.write_text(render(results, failures))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
