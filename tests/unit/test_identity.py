"""A domain's own storage keys are named by environment variables, never written in settings; a run whose
domain's variables are unset is refused naming them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mesh_assets.engine.identity import (
    CredentialsMissing,
    domain_environ,
    domain_keys,
    joined,
    run_identity,
    use_identity,
)
from mesh_assets.model.errors import Refused
from mesh_assets.settings import MeshSettings


def settings(**domains: dict[str, str]) -> MeshSettings:
    return MeshSettings(warehouse="s3a://lake/wh", s3={"domains": domains})


def test_a_domains_keys_come_from_the_variables_its_settings_name(monkeypatch):
    monkeypatch.setenv("CENTRAL_KEY", "AKIACENTRAL")
    monkeypatch.setenv("CENTRAL_SECRET", "s3cr3t")
    s = settings(central={"access_key_env": "CENTRAL_KEY", "secret_key_env": "CENTRAL_SECRET"})
    assert domain_keys(s, "central") == {"access.key": "AKIACENTRAL", "secret.key": "s3cr3t"}
    assert domain_environ(s, "central") == {"AWS_ACCESS_KEY_ID": "AKIACENTRAL", "AWS_SECRET_ACCESS_KEY": "s3cr3t"}
    assert domain_keys(s, "courier") is None  # not listed: the deployment's keys
    assert run_identity(s, "central").storage == "domain"
    assert run_identity(s, "central").access_key_env == "CENTRAL_KEY"
    assert run_identity(s, "courier").storage == "deployment"


def test_an_unset_variable_refuses_the_run_naming_it(monkeypatch):
    monkeypatch.setenv("CENTRAL_KEY", "AKIACENTRAL")
    monkeypatch.delenv("CENTRAL_SECRET", raising=False)
    s = settings(central={"access_key_env": "CENTRAL_KEY", "secret_key_env": "CENTRAL_SECRET"})
    with pytest.raises(CredentialsMissing, match="CENTRAL_SECRET is not set in this process's environment"):
        domain_keys(s, "central")


def test_a_key_pasted_into_the_settings_is_refused():
    with pytest.raises(ValidationError, match="access_key"):
        settings(central={"access_key": "AKIA", "secret_key_env": "S"})
    with pytest.raises(ValidationError, match="secret_key_env"):
        settings(central={"access_key_env": "K", "secret_key_env": "wJalrXUtnFEMI/K7MDENG/bPxRfiCY"})


def test_the_tag_names_every_domain_that_ran_in_the_run():
    assert joined(None, "hb") == "hb"
    assert joined("hb", "hb") == "hb"
    assert joined("hb", "ha") == "ha,hb"


class _Tracker:
    def getJobIdsForGroup(self, group=None):
        return [0]  # a job already ran


class _Application:
    """A cluster's application that already ran a job: its executors hold file systems made with other keys."""

    class sparkContext:
        @staticmethod
        def statusTracker():
            return _Tracker()


def test_a_cluster_application_that_ran_jobs_refuses_a_domains_keys(monkeypatch):
    monkeypatch.setenv("CENTRAL_KEY", "AKIACENTRAL")
    monkeypatch.setenv("CENTRAL_SECRET", "s3cr3t")
    s = MeshSettings(
        warehouse="s3a://lake/wh",
        spark={"master": "spark://10.0.0.5:7077"},
        s3={"domains": {"central": {"access_key_env": "CENTRAL_KEY", "secret_key_env": "CENTRAL_SECRET"}}},
    )
    with pytest.raises(Refused, match="already ran jobs with the deployment's storage keys, which its executors keep"):
        use_identity(_Application(), s, "central")
    connect = s.model_copy(update={"spark": s.spark.model_copy(update={"master": "sc://10.0.0.5:15002"})})
    with pytest.raises(Refused, match="Mesh cannot give a Spark Connect server"):
        use_identity(_Application(), connect, "central")
