"""A command run as in a user's terminal (a pseudo-terminal of a given size), and the lines it leaves there.

A live display redraws itself in place (cursor up, erase line, write again), so counting the newlines a
command wrote says nothing of what its user saw; :func:`screen_lines` replays the output as a terminal does,
for the few control sequences rich emits, and returns the lines left on the screen and in its scrollback.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
import time
from pathlib import Path

CONTROL = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])|\x1b[()][A-Za-z0-9]|[\r\n\x07\x08]")


def run_in_terminal(
    argv: list[str], cwd: Path, env: dict[str, str], timeout: float, columns: int = 80, rows: int = 50
) -> tuple[int, str]:
    """Run ``argv`` with stdin, stdout and stderr on a pseudo-terminal: its exit code and all it wrote."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {**env, "COLUMNS": str(columns), "LINES": str(rows)}
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=child, stdout=child, stderr=child, start_new_session=True)
    os.close(child)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while True:
            if time.monotonic() > deadline:
                process.kill()
                raise TimeoutError(f"{argv} still running after {timeout} s")
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(main)
    return process.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


def screen_lines(output: str) -> list[str]:
    """The lines ``output`` leaves on a terminal (scrollback included), without colours or trailing spaces."""
    lines, row, col, at = [""], 0, 0, 0
    for match in CONTROL.finditer(output + "\r"):
        text = output[at : match.start()]
        at = match.end()
        if text:
            line = lines[row].ljust(col)
            lines[row] = line[:col] + text + line[col + len(text) :]
            col += len(text)
        token = match.group(0)
        if token == "\n":
            row, col = row + 1, 0
            if row == len(lines):
                lines.append("")
        elif token == "\r":
            col = 0
        elif match.group(2) == "A":  # cursor up
            row = max(0, row - int(match.group(1) or 1))
        elif match.group(2) == "K":  # erase (the whole line: rich erases lines it redraws)
            lines[row] = "" if match.group(1) == "2" else lines[row][:col]
    stripped = [line.rstrip() for line in lines]
    while stripped and not stripped[-1]:
        stripped.pop()
    return stripped
