"""Which domain's identity a run works under, and the storage keys that go with it.

Every run of a domain's asset is tagged ``mesh/identity=<domain>`` by the asset's step (:func:`identify_run`),
and its lineage's ``mesh_identity`` facet says so (:func:`run_identity`). With keys of its own for a domain
(``s3.domains.<domain>`` in settings: the names of the variables holding them), Spark writes the warehouse's
bucket with that domain's keys while its run computes (:func:`use_identity`), so a storage policy per key
confines each domain to its own prefix: another domain's product cannot write there even if it escaped Mesh's
enclosure.

The keys are set on the session's Hadoop configuration for the warehouse's bucket only (s3a's per-bucket
options: tables in other buckets keep the deployment's keys), never as Spark configuration (shown on command
lines and in Spark's UI). Hadoop keeps one file system per bucket and JVM, made with the keys of its first
use, so a change of identity closes the driver's: the next access opens one with the new keys. Executors on a
cluster keep theirs, made with the keys of the application's first jobs, so there a domain's keys are set only
before the application's first job, and an application that ran jobs under other keys refuses them (one code
location per domain runs its steps in processes of its own).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from mesh_assets.compat import add_run_tags
from mesh_assets.model.errors import Refused
from mesh_assets.settings import MeshSettings

if TYPE_CHECKING:
    import dagster as dg
    from pyspark.sql import SparkSession

IDENTITY_TAG = "mesh/identity"
"""The run tag naming the domain (or domains, comma-separated) whose identity the run worked under."""
_KEYS = ("access.key", "secret.key", "session.token", "aws.credentials.provider")
_TEMPORARY = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
_lock = threading.Lock()
_applied: dict[int, tuple[str | None, str | None]] = {}
"""Per session (its id), the domain whose keys its Hadoop configuration holds (None: the deployment's) and the
access key id they were read as."""


class CredentialsMissing(Refused):
    """A domain's keys are configured but the variables naming them are not set: nothing runs."""


@dataclass(frozen=True)
class RunIdentity:
    """Whose identity a run works under: its domain, and where its storage keys come from (a variable's name,
    never a key)."""

    domain: str
    storage: str
    """``domain``: the domain's own keys; ``deployment``: the deployment's (``AWS_*`` or Hadoop's AWS chain)."""
    access_key_env: str | None = None


def run_identity(settings: MeshSettings, domain: str) -> RunIdentity:
    """``domain``'s identity under ``settings``: its own keys when ``s3.domains`` lists it."""
    keys = settings.s3.domains.get(domain)
    if keys is None:
        return RunIdentity(domain, "deployment")
    return RunIdentity(domain, "domain", keys.access_key_env)


def joined(current: str | None, domain: str) -> str:
    """The tag's value once ``domain`` ran in the run: the domains, sorted, comma-separated (one, usually: a
    domain's code location runs its own assets)."""
    domains = {d for d in (current or "").split(",") if d}
    return ",".join(sorted(domains | {domain}))


def identify_run(context: dg.AssetExecutionContext, settings: MeshSettings, domain: str) -> RunIdentity:
    """Tag the step's run with ``domain`` (added to the domains already named), whatever launched it (a sensor,
    a backfill, the UI, the command line), and return the domain's identity."""
    run = context.instance.get_run_by_id(context.run.run_id)
    current = (run.tags if run is not None else context.run.tags).get(IDENTITY_TAG)
    value = joined(current, domain)
    if value != current:
        add_run_tags(context.instance, context.run.run_id, {IDENTITY_TAG: value})
    return run_identity(settings, domain)


def domain_keys(settings: MeshSettings, domain: str) -> dict[str, str] | None:
    """s3a's options for ``domain``'s own keys (without the bucket prefix), read from the variables settings name;
    None when the domain has none. Refused, naming the variable, when one is configured but unset."""
    keys = settings.s3.domains.get(domain)
    if keys is None:
        return None
    names = {"access.key": keys.access_key_env, "secret.key": keys.secret_key_env}
    if keys.session_token_env:
        names["session.token"] = keys.session_token_env
    missing = [n for n in names.values() if not os.environ.get(n)]
    if missing:
        raise CredentialsMissing(
            f"domain {domain}'s storage keys are configured (s3.domains.{domain}) as the environment variables "
            f"{', '.join(names.values())}, but {', '.join(missing)} is not set in this process's environment; "
            "nothing was run"
        )
    options = {option: os.environ[name] for option, name in names.items()}
    if "session.token" in options:
        options["aws.credentials.provider"] = _TEMPORARY
    return options


def domain_environ(settings: MeshSettings, domain: str) -> dict[str, str]:
    """``domain``'s own keys as ``AWS_*`` variables, for a Spark application launched for its run alone
    (spark-submit: its session takes its keys from them); empty when it has none."""
    options = domain_keys(settings, domain)
    if options is None:
        return {}
    names = {"access.key": "AWS_ACCESS_KEY_ID", "secret.key": "AWS_SECRET_ACCESS_KEY"}
    names["session.token"] = "AWS_SESSION_TOKEN"
    return {names[k]: v for k, v in options.items() if k in names}


def warehouse_bucket(settings: MeshSettings) -> str | None:
    """The bucket of an ``s3a://`` warehouse; None for any other."""
    parsed = urlparse(settings.warehouse_uri)
    return parsed.netloc if parsed.scheme == "s3a" and parsed.netloc else None


def use_identity(spark: SparkSession, settings: MeshSettings, domain: str) -> None:
    """Make ``spark`` write the warehouse's bucket with ``domain``'s keys (the deployment's when it has none).

    Nothing to do without an ``s3a://`` warehouse, or while no domain has keys of its own. Refused under Spark
    Connect (the server's keys write; run a server per domain) and on a cluster whose application already ran
    jobs with other keys (its executors keep the file systems those made).
    """
    bucket = warehouse_bucket(settings)
    if bucket is None or not settings.s3.domains:
        return
    options = domain_keys(settings, domain)
    if settings.connect:
        if options is None:
            return
        raise Refused(
            f"domain {domain} has storage keys of its own (s3.domains.{domain}), which Mesh cannot give a Spark "
            f"Connect server ({settings.spark.master}): the server writes with its own; give {domain} a server "
            "started with its keys, or remove its entry; nothing was run"
        )
    wanted = (domain if options else None, options["access.key"] if options else None)
    with _lock:
        applied = _applied.get(id(spark), (None, None))
        if applied[1] == wanted[1]:
            return
        local = settings.spark.master.startswith("local")
        if not local and (id(spark) in _applied or spark.sparkContext.statusTracker().getJobIdsForGroup()):
            raise Refused(
                f"this Spark application ({settings.spark.master}) already ran jobs with "
                f"{applied[0] or 'the deployment'}'s storage keys, which its executors keep: run domain {domain}'s "
                "steps in a process of their own (its own code location); nothing was run"
            )
        _set_keys(spark, bucket, options)
        _applied[id(spark)] = wanted


def _set_keys(spark: SparkSession, bucket: str, options: dict[str, str] | None) -> None:
    """Put ``options`` (or none: the deployment's keys) on the bucket's s3a configuration and close the bucket's
    cached file system, so the next access opens one with them."""
    jvm = spark.sparkContext._jvm
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for option in _KEYS:
        name = f"fs.s3a.bucket.{bucket}.{option}"
        if options and option in options:
            hadoop.set(name, options[option])
        else:
            hadoop.unset(name)
    uri = jvm.java.net.URI(f"s3a://{bucket}/")
    jvm.org.apache.hadoop.fs.FileSystem.get(uri, hadoop).close()
