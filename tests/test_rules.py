"""Every rule id the repository cites resolves in docs/rules.md, and every
rule defined there is cited somewhere.

An id is a capital letter and a number from 1, in square brackets. A
definition is a list item of docs/rules.md that opens with the id in bold.
A rule marked *not built yet* may be defined before any code cites it.
Nothing cites a document the repository does not hold (the product's
specification or its source notes): their rules are stated in docs/rules.md.
The checker is tried on a planted tree first, so a check that could not
fail would be caught.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "docs" / "rules.md"
THIS = Path(__file__).resolve()
# Where citations live: the package, its tests, docs, man page, schemas, hooks, benches.
CITING = ("git_harn", "tests", "docs", "man", "schemas", "hooks", "bench", "README.md")
SKIP_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}

# Rules are numbered from 1, so code such as a list of one ``T0`` is no citation.
ID = r"\[([A-Z][1-9][0-9]?)\]"
CITED = re.compile(ID)
DEFINED = re.compile(r"^- \*\*" + ID, re.MULTILINE)
NOT_BUILT = "*(not built yet)*"
# A reference to a document the repository does not hold: say the rule id instead.
OUTSIDE = re.compile(r"\bSPEC\b|\bseeds? 0\d\d\b|\bthe seed\b|\bseed's\b")


def definitions(text: str) -> dict[str, str]:
    """Each defined id and the line that defines it."""
    found: dict[str, str] = {}
    for match in DEFINED.finditer(text):
        rule = match.group(1)
        assert rule not in found, f"{rule} is defined twice in docs/rules.md"
        found[rule] = text[match.start():text.find("\n", match.start())]
    return found


def citations(root: Path, rules: Path) -> dict[str, list[str]]:
    """Each cited id and the files that cite it (rules.md itself not counted)."""
    cited: dict[str, list[str]] = {}
    for path in _files(root):
        if path in (rules, THIS):  # a definition, or this file's planted examples
            continue
        for rule in set(CITED.findall(_text(path))):
            cited.setdefault(rule, []).append(str(path.relative_to(root)))
    return cited


def _files(root: Path) -> list[Path]:
    found: list[Path] = []
    for name in CITING:
        top = root / name
        if top.is_file():
            found.append(top)
        elif top.is_dir():
            found += [p for p in sorted(top.rglob("*"))
                      if p.is_file() and not SKIP_DIRS & set(p.relative_to(root).parts)]
    return found


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):  # a binary file cites nothing
        return ""


def problems(root: Path, rules: Path) -> list[str]:
    """What is wrong between the citations and the definitions, one line each."""
    text = rules.read_text(encoding="utf-8")
    defined = definitions(text)
    cited = citations(root, rules)
    wrong = [f"{rule} is cited in {', '.join(sorted(where))} but not defined in docs/rules.md"
             for rule, where in sorted(cited.items()) if rule not in defined]
    wrong += [f"{rule} is cited inside docs/rules.md but not defined there"
              for rule in sorted(set(CITED.findall(text)) - set(defined))]
    wrong += [f"{rule} is defined in docs/rules.md but cited nowhere"
              for rule, line in sorted(defined.items())
              if rule not in cited and NOT_BUILT not in line]
    return wrong


def test_every_cited_rule_is_defined_and_every_defined_rule_is_cited() -> None:
    assert problems(ROOT, RULES) == []


def outside_references(root: Path) -> list[str]:
    """Each line that cites a document outside the repository, as path:line."""
    return [f"{path.relative_to(root)}:{number}: {line.strip()}"
            for path in _files(root) if path != THIS
            for number, line in enumerate(_text(path).splitlines(), 1) if OUTSIDE.search(line)]


def test_nothing_cites_a_document_outside_the_repository() -> None:
    assert outside_references(ROOT) == []


def test_a_planted_outside_reference_is_found(tmp_path: Path) -> None:
    _planted(tmp_path, "- **[Q1] one.**\n", "x = 1  # exit codes (" + "SPEC 8) [Q1]\n")
    assert outside_references(tmp_path) == ["git_harn/mod.py:1: x = 1  # exit codes (" + "SPEC 8) [Q1]"]


def test_the_rules_page_defines_rules_of_every_area() -> None:
    areas = {rule[0] for rule in definitions(RULES.read_text(encoding="utf-8"))}
    assert {"P", "W", "H", "A", "I", "L", "T"} <= areas


def _planted(tmp_path: Path, rules: str, code: str) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "git_harn").mkdir()
    (tmp_path / "docs" / "rules.md").write_text(rules, encoding="utf-8")
    (tmp_path / "git_harn" / "mod.py").write_text(code, encoding="utf-8")
    return tmp_path / "docs" / "rules.md"


def test_a_planted_undefined_citation_and_an_uncited_rule_are_both_found(tmp_path: Path) -> None:
    rules = _planted(tmp_path,
                     "- **[Q1] one.** cited.\n- **[Q2] two.** nowhere.\n"
                     "- **[Q3] three.** *(not built yet)* nowhere, allowed.\n",
                     "x = 1  # [Q1] [Q4]\nlanes = [Q0] * 2\n")
    assert problems(tmp_path, rules) == [
        "Q4 is cited in git_harn/mod.py but not defined in docs/rules.md",
        "Q2 is defined in docs/rules.md but cited nowhere",
    ]


def test_a_planted_tree_that_agrees_has_no_problem(tmp_path: Path) -> None:
    rules = _planted(tmp_path, "- **[Q1] one.** see [Q2].\n- **[Q2] two.**\n",
                     '"""[Q1] [Q2]"""\n')
    assert problems(tmp_path, rules) == []
