"""``mesh --help`` and every subcommand's help end with an example that the parser accepts as typed."""

from __future__ import annotations

import re
import shlex

import pytest

from mesh_assets.cli.main import main, parser


def subcommands() -> list[str]:
    """The subcommands as the usage line lists them: ``mesh [-h] {setup,demo,...} ...``."""
    (choices,) = re.findall(r"\{([\w,-]+)\}", parser().format_usage())
    return choices.split(",")


def example_in(help_text: str) -> str:
    lines = help_text.splitlines()
    assert "example:" in lines, help_text
    return lines[lines.index("example:") + 1].strip()


@pytest.mark.parametrize("command", [None, *subcommands()])
def test_help_gives_an_example_that_parses(command: str | None, capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"] if command else ["--help"])
    assert exit_.value.code == 0
    example = example_in(capsys.readouterr().out)
    words = shlex.split(example)
    assert words[0] == "mesh"
    args = parser().parse_args(words[1:])
    if command:
        assert args.command == command
