"""The man page and the README or docs/ document every assessment command and option."""

from __future__ import annotations

from pathlib import Path

import click

from git_harn.commands.assess import assess, gates, salvage_artefacts
from tests.kit.harn import docs_text

ROOT = Path(__file__).resolve().parents[2]


def test_every_assessment_command_and_option_is_in_the_man_page_and_readme() -> None:
    man = (ROOT / "man/git-harn.1").read_text().replace("\\-", "-")
    readme = docs_text()
    commands: list[tuple[str, click.Command]] = [("assess", assess), ("salvage-artefacts", salvage_artefacts)]
    assert isinstance(gates, click.Group)
    commands += [(f"gates {name}", command) for name, command in gates.commands.items()]
    for name, command in commands:
        assert f"git harn {name}" in man and f"git harn {name}" in readme
        for param in command.params:
            for option in getattr(param, "opts", []):
                if option.startswith("--"):
                    assert option in man, (name, option)
    assert "git harn report check assessment" in man
