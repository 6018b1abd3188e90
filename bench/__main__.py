"""``make bench``: run every benchmark and write BENCHMARKS.md (ratios against same-run baselines).

``python -m bench --only writes`` re-measures one benchmark and keeps the others' last results;
``python -m bench --only`` re-renders BENCHMARKS.md from the last results alone.
"""

from __future__ import annotations

import argparse
import importlib
import json
import traceback
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from bench.common import ROOT, Result, machine

SUITE = [
    "cli_startup",
    "definitions_load",
    "graph_scale",
    "partition_overhead",
    "backfill",
    "minute_backfill",
    "writes",
    "maintenance",
    "history",
    "observer_tick",
    "automation_tick",
    "automation_regions",
    "domain_isolation",
    "demo_end_to_end",
    "demo_stages",
    "connect_startup",
    "jvm_start",
    "submit_mode",
    "volume",
    "kind_changes",
    "kind_merge",
    "diff",
    "capacity",
    "capacity_delta",
    "capacity_web",
    "promotion",
]


def render(results: list[Result], failures: dict[str, str]) -> str:
    stamps = sorted({r.measured for r in results if r.measured}) or ["at an unknown time"]
    when = stamps[0] if len(stamps) == 1 else f"between {stamps[0]} and {stamps[-1]}"
    lines = [
        "# Benchmarks",
        "",
        f"Measured {when} UTC on {machine()} by `make bench`, or one benchmark again by",
        "`python -m bench --only NAME`, which keeps the other rows with the time each was measured.",
        "Every figure is a ratio against a baseline measured in the same run; absolute seconds beside it.",
        "",
        "| benchmark | case | seconds | baseline | baseline seconds | ratio | target | met | measured (UTC) |",
        "|---|---|---:|---|---:|---:|---|---|---|",
    ]
    for r in results:
        met = "" if r.met is None else ("yes" if r.met else "**no**")
        case = f"{r.case} ({r.notes})" if r.notes else r.case
        lines.append(
            f"| {r.benchmark} | {case} | {r.seconds:.3f} | {r.baseline} | {r.baseline_seconds:.3f} | "
            f"{r.ratio:.2f} | {r.target} | {met} | {r.measured} |"
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
    store = ROOT / ".mesh" / "bench-results.json"
    saved = json.loads(store.read_text()) if store.exists() and set(args.only) != set(SUITE) else {}
    results: list[Result] = [Result(**row) for name in SUITE if name not in args.only for row in saved.get(name, [])]
    failures: dict[str, str] = {}
    for name in args.only:
        try:
            module = importlib.import_module(f"bench.{name}")
        except ModuleNotFoundError as exc:
            failures[name] = f"not available: {exc}"
            continue
        try:
            measured = module.run()
            for r in measured:
                r.measured = f"{datetime.now(UTC):%Y-%m-%d %H:%M}"
            results += measured
            saved[name] = [asdict(r) for r in measured]
            print(f"{name}: done")
        except Exception as exc:
            failures[name] = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
    if not results and not failures:  # nothing measured, nothing kept: keep BENCHMARKS.md as it is
        parser.error(f"no results to render: {store} holds none; measure one first (--only NAME)")
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_text(json.dumps(saved, indent=1))
    order = {name: i for i, name in enumerate(SUITE)}
    results.sort(key=lambda r: order.get(next((n for n, rows in saved.items() if asdict(r) in rows), ""), 99))
    args.output.write_text(render(results, failures))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
