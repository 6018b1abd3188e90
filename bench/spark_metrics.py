"""What Spark itself says a measured block cost: its jobs and stages, and the memory peaks of its JVM.

The block's jobs are put in a job group of their own; afterwards Spark's status store (the data behind its UI
and REST API, kept whether or not the UI runs) gives each job's duration and call site, and each stage's peak
executor metrics: JVM heap, the storage memory that cached blocks hold, the execution memory of sorts and
aggregations. Per-stage peaks need ``spark.executor.metrics.pollingInterval`` set when the session starts
(:data:`POLLING`); without it they come from heartbeats and miss short stages. The JVM's resident set is
sampled from ``/proc`` every 100 ms beside them. In local mode the driver runs the executor, so every figure
is the one JVM's, driver and executor together.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import SparkSession

POLLING = {"spark.executor.metrics.pollingInterval": "100ms"}
"""Session configuration for per-stage memory peaks (set before the session starts)."""
PEAKS = ("JVMHeapMemory", "OnHeapStorageMemory", "OnHeapExecutionMemory")
_groups = itertools.count()


@dataclass
class Measured:
    """One measured block: wall time, Spark's jobs (call site, wall seconds, task seconds: the time its tasks
    ran, summed over cores) and the JVM's peaks in MiB."""

    seconds: float = 0.0
    jobs: list[tuple[str, float, float]] = field(default_factory=list)
    peaks: dict[str, float] = field(default_factory=dict)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def jvm_pid(spark: SparkSession) -> int:
    return int(spark.sparkContext._jvm.ProcessHandle.current().pid())


@contextmanager
def measured(spark: SparkSession) -> Iterator[Measured]:
    """Time the block and collect what Spark ran for it (jobs started from this thread)."""
    sc = spark.sparkContext
    group = f"bench-{next(_groups)}"
    out, pid, done = Measured(), jvm_pid(spark), threading.Event()
    out.peaks["JVM RSS"] = rss_mib(pid)

    def sample() -> None:
        while not done.wait(0.1):
            out.peaks["JVM RSS"] = max(out.peaks["JVM RSS"], rss_mib(pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    sc.setJobGroup(group, group)
    start = time.perf_counter()
    try:
        yield out
    finally:
        out.seconds = time.perf_counter() - start
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
        done.set()
        sampler.join()
    _collect(spark, group, out)


def _collect(spark: SparkSession, group: str, out: Measured) -> None:
    store = spark.sparkContext._jsc.sc().statusStore()
    for job_id in spark.sparkContext.statusTracker().getJobIdsForGroup(group):
        job = store.job(job_id)
        began, ended = job.submissionTime(), job.completionTime()
        wall = (ended.get().getTime() - began.get().getTime()) / 1000 if began.isDefined() and ended.isDefined() else 0
        stages, task_ms = job.stageIds(), 0
        for i in range(stages.size()):
            try:
                stage = store.lastStageAttempt(stages.apply(i))
            except Exception:  # a skipped stage has no attempt
                continue
            task_ms += stage.executorRunTime()
            peaks = stage.peakExecutorMetrics()
            if peaks.isDefined():
                for name in PEAKS:
                    value = peaks.get().getMetricValue(name) / 2**20
                    out.peaks[name] = max(out.peaks.get(name, 0.0), value)
        out.jobs.append((str(job.name()), wall, task_ms / 1000))


def describe(peaks: dict[str, float]) -> str:
    """``heap 1,234 MiB (storage 300, execution 64), RSS 2,000 MiB``."""
    heap, storage, execution = (peaks.get(n, 0.0) for n in PEAKS)
    return (
        f"heap {heap:,.0f} MiB (storage {storage:,.0f}, execution {execution:,.0f}), "
        f"RSS {peaks.get('JVM RSS', 0.0):,.0f} MiB"
    )
