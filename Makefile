# The README's commands. Every target sets itself up first; `setup` is idempotent and quick when done.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.mesh-installed
JARS   := .mesh/jars/.complete
JVM_ARCHIVE := .mesh/jvm/.archived
S3A_JARS := .mesh/jars/s3a/.complete
DBT_MANIFEST := dbt_project/target/manifest.json
export MESH_PROJECT_ROOT := $(CURDIR)
export DAGSTER_HOME ?= $(CURDIR)/.mesh/dagster

.PHONY: setup test-setup bytecode services demo dev test test-fast bench lint clean

# What `make demo` uses, and nothing more.
setup: $(STAMP) bytecode $(JARS) $(DBT_MANIFEST)

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check uv==0.13.9
	$(BIN)/uv pip sync -q --compile-bytecode --python $(BIN)/python requirements.lock
	$(BIN)/uv pip install -q --python $(BIN)/python --no-deps -e .
	touch $(STAMP)

# Mesh's own modules and the example's domains as bytecode, as the environment's packages are
# (`--compile-bytecode`): where the environment sets PYTHONDONTWRITEBYTECODE, as containers often do, every
# process (a code server, a run, a test's subprocess) would compile them again, about 35 ms of each location
# load for the composition root alone. compileall skips what is current; a stale file is compiled in memory.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q mesh_assets mesh_examples domains

# Delta's jars: the core set, which the local default needs (cloud jars come with settings that use them).
$(JARS): mesh_assets/engine/jars.pom.xml $(STAMP)
	$(BIN)/mesh setup --no-archive
	touch $(JARS)

# What the suite and the benchmarks add: the s3a jars, for the object-storage tests (nothing downloads during a
# test), and Spark's classes archived for every later driver's JVM (mesh_assets/engine/jvm.py), which pays
# over the suite's dozens of drivers but not over the demo's one (BENCHMARKS.md, "demo stages").
$(S3A_JARS) $(JVM_ARCHIVE) &: mesh_assets/engine/jars.pom.xml $(STAMP) $(JARS)
	$(BIN)/mesh setup --jars s3a
	touch $(S3A_JARS) $(JVM_ARCHIVE)

test-setup: setup $(S3A_JARS) $(JVM_ARCHIVE)

$(DBT_MANIFEST): $(STAMP) dbt_project/dbt_project.yml $(shell find dbt_project/models dbt_project/macros -type f)
	$(BIN)/python -m mesh_assets.dbt.prepare

services:
	scripts/install-services.sh

# `make demo DEMO_ARGS=--verbose` prints dbt's, Spark's and Dagster's logs rather than keeping them in .mesh/logs.
DEMO_ARGS ?=

demo: setup
	$(BIN)/mesh demo $(DEMO_ARGS)

# Always on the loopback; `make dev DEV_PORT=3001 DEV_WORKSPACE=other.yaml` serves another port or workspace.
# The terminal shows Dagster's warnings and errors, not its INFO lines (every daemon's ticks) nor its advice to
# use `dg dev` (this target is the command): `make dev DEV_LOG_LEVEL=info` shows them all.
DEV_PORT      ?= 3000
DEV_WORKSPACE ?= workspace.yaml
DEV_LOG_LEVEL ?= warning

# `mesh setup` again: the jars and the instance the settings ask for now (an s3a:// warehouse, postgres).
dev: setup
	$(BIN)/mesh setup --no-archive
	@echo "Dagster UI on http://127.0.0.1:$(DEV_PORT) once its code locations load; Ctrl-C stops it"
	@PYTHONWARNINGS='ignore:Function `dev_command` is superseded' \
	  $(BIN)/dagster dev -w $(DEV_WORKSPACE) -h 127.0.0.1 -p $(DEV_PORT) --log-level $(DEV_LOG_LEVEL)

# Three workers, one test file each at a time: each worker has its own SparkSession, and while one waits on a
# server it started (daemon, webserver, cluster, Postgres, a run's own Spark) the others compute; the suite
# waits more than it computes, so on two cores a third worker finishes sooner. Files are handed out in the
# order tests/conftest.py gives them (the ones that start servers first), not re-sorted by test count; files that
# share a session fixture starting a server (tests/conftest.py, SHARING_SESSION_FIXTURES) go to one worker together.
PYTEST_PARALLEL := -n 3 --dist loadfile --no-loadscope-reorder

test: test-setup services
	$(BIN)/pytest $(PYTEST_PARALLEL)

test-fast: test-setup
	$(BIN)/pytest $(PYTEST_PARALLEL) -m "not slow and not e2e"

bench: test-setup
	$(BIN)/python -m bench

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf .mesh/dagster .mesh/warehouse .mesh/lineage
