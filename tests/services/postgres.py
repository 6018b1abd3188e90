"""A throwaway Postgres server from Debian's packages: a fresh cluster in a temporary directory, bound to
127.0.0.1 on a free port, removed when stopped. Postgres refuses to run as root, so as root the cluster
belongs to the ``postgres`` user."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from processes import free_port, tail

DATABASE = "dagster"
USER = "mesh"


def bin_dir() -> Path:
    """The newest installed server's binaries (``scripts/install-services.sh`` installs them)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parent.parent.name))
    if not found:
        raise FileNotFoundError("no Postgres server under /usr/lib/postgresql; run scripts/install-services.sh")
    return found[-1].parent


@dataclass
class Postgres:
    root: Path
    port: int
    password: str
    host: str = "127.0.0.1"

    @property
    def env(self) -> dict[str, str]:
        """What a Dagster instance written by ``mesh setup --instance postgres`` reads."""
        return {
            "DAGSTER_PG_HOST": self.host,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_USER": USER,
            "DAGSTER_PG_PASSWORD": self.password,
            "DAGSTER_PG_DB": DATABASE,
        }

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "server.log"


def _as_owner(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _run(command: list[str]) -> None:
    subprocess.run(_as_owner(command), check=True, capture_output=True, text=True)


def start_postgres() -> Postgres:
    """initdb, start, create the database; the caller stops it with :func:`stop_postgres`."""
    root = Path(tempfile.mkdtemp(prefix="mesh-pg-"))
    server = Postgres(root, free_port(), secrets.token_urlsafe(16))
    (root / "socket").mkdir()
    password_file = root / "password"
    password_file.write_text(server.password)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        for path in (root / "socket", password_file):
            shutil.chown(path, "postgres")
    pg = bin_dir()
    auth = ["--auth-host=scram-sha-256", "--auth-local=trust"]
    _run([str(pg / "initdb"), "-D", str(server.data), "-U", USER, f"--pwfile={password_file}", *auth, "--no-sync"])
    password_file.unlink()
    options = f"-h 127.0.0.1 -p {server.port} -k {root / 'socket'} -c fsync=off"
    try:
        _run([str(pg / "pg_ctl"), "-D", str(server.data), "-l", str(server.log), "-o", options, "-w", "start"])
        _run([str(pg / "createdb"), "-h", str(root / "socket"), "-p", str(server.port), "-U", USER, DATABASE])
    except subprocess.CalledProcessError as exc:
        stop_postgres(server)
        raise RuntimeError(f"Postgres did not start: {exc.stderr}\n{tail(server.log)}") from exc
    return server


def stop_postgres(server: Postgres) -> None:
    """Stop the server (fast shutdown; kill if it lingers) and remove its files."""
    pg = bin_dir()
    if (server.data / "postmaster.pid").exists():
        result = subprocess.run(
            _as_owner([str(pg / "pg_ctl"), "-D", str(server.data), "-m", "fast", "-w", "-t", "30", "stop"]),
            capture_output=True,
        )
        if result.returncode != 0 and (server.data / "postmaster.pid").exists():
            pid = int((server.data / "postmaster.pid").read_text().split()[0])
            os.kill(pid, 9)
    shutil.rmtree(server.root, ignore_errors=True)
