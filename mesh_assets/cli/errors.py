"""What a ``mesh`` command prints when it cannot go on: the errors a user can act on, never a traceback.

Every command that reads the mesh builds it first, and a mesh that does not pass governance stops there with the
errors ``mesh validate`` prints (file, line and field). A setting Mesh cannot read names the setting and where it
comes from. Anything else is a fault of Mesh itself: one line naming it, its traceback kept in a file for the
bug report.
"""

from __future__ import annotations

import tempfile
import traceback
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from mesh_assets.model.errors import SpecValidationError

if TYPE_CHECKING:
    from rich.console import Console

GOVERNANCE = "the mesh does not pass governance (`mesh validate`): nothing done"


def run_reported(command: str, handler: Callable[[], int], console: Console) -> int:
    """``handler``'s exit code; 2 with the errors printed when the mesh or the settings are wrong, 70 (the
    BSD ``EX_SOFTWARE``) with the file holding the traceback when Mesh itself failed, 130 when interrupted."""
    try:
        return handler()
    except SpecValidationError as exc:
        for error in exc.errors:
            console.print(f"[red]error[/red] {error}", highlight=False, soft_wrap=True)
        console.print(f"[red]error[/red] {GOVERNANCE}", highlight=False)
        return 2
    except ValidationError as exc:
        if exc.title != "MeshSettings":
            return unexpected(command, exc, console)
        for item in exc.errors():
            console.print(f"[red]error[/red] {setting_error(item)}; nothing done", highlight=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        console.print("interrupted")
        return 130
    except Exception as exc:
        return unexpected(command, exc, console)


def setting_error(item: Mapping[str, Any]) -> str:
    """A setting's error, named as mesh.yaml and the environment spell it."""
    loc = [str(part) for part in item["loc"]]
    if not loc:
        return f"settings: {item['msg']}"
    variable = "MESH_" + "__".join(loc).upper()
    return f"setting {'.'.join(loc)}: {item['msg']} (from mesh.yaml, the file MESH_CONFIG names, or {variable})"


def unexpected(command: str, exc: BaseException, console: Console) -> int:
    """A fault of Mesh's own, not of the input: named in one line, the traceback written to a file."""
    log = traceback_file()
    log.write_text(f"mesh {command} at {datetime.now(UTC).isoformat()}\n{traceback.format_exc()}")
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    console.print(
        f"[red]error[/red] mesh {command} failed: {type(exc).__name__}: {message} (a fault in Mesh, not in your "
        f"specs; the traceback is in {log}: include it in the bug report)",
        highlight=False,
        soft_wrap=True,
    )
    return 70


def traceback_file() -> Path:
    """Under Mesh's logs when its settings load, else the system's temporary directory."""
    try:
        from mesh_assets.settings import get_settings

        folder = get_settings().home / "logs"
        folder.mkdir(parents=True, exist_ok=True)
    except Exception:
        folder = Path(tempfile.gettempdir())
    return Path(tempfile.mkstemp(prefix="mesh-error-", suffix=".log", dir=folder)[1])
