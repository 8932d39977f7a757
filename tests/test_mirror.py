"""tests/ mirrors git_harn/ (docs/code-layout.md): a test file sits in the
folder of the code it mainly tests (``tests/store/`` for ``git_harn/store/``,
``tests/workflow/run/`` for ``git_harn/workflow/run/``), the trust-boundary
suites in ``tests/trust/``, and the project-wide checks and the tests of the
package's top modules in ``tests/`` itself. What tests share lives in
``tests/kit/`` only. Every folder is a package, so two test files of one name
in two folders are two modules, not a clash."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parent / "git_harn"
OWN = {"kit", "trust"}  # tests/'s folders of its own; every other mirrors one of the package
DATA = {"fixtures"}  # data and the script that made it, never imported
SESSION = {"__init__.py", "conftest.py"}


def misplaced(tests: Path, package: Path) -> list[str]:
    """Each file of ``tests`` not where the mirror puts it, with why."""
    wrong = []
    for path in sorted(tests.rglob("*.py")):
        rel = path.relative_to(tests)
        folder = rel.parent
        top = folder.parts[0] if folder.parts else ""
        if top in DATA or "__pycache__" in rel.parts:
            continue
        if not (path.parent / "__init__.py").is_file():
            wrong.append(f"{rel}: its folder is no package (no __init__.py)")
        if path.name in SESSION:
            continue
        if not path.name.startswith("test_"):
            if top != "kit":
                wrong.append(f"{rel}: a shared module outside tests/kit/")
        elif top == "kit":
            wrong.append(f"{rel}: a test file in tests/kit/")
        elif folder.parts and top not in OWN and not (package / folder).is_dir():
            wrong.append(f"{rel}: git_harn/{folder.as_posix()}/ does not exist")
    return wrong


def test_every_test_file_sits_where_the_package_has_its_code() -> None:
    wrong = misplaced(TESTS, PACKAGE)
    assert not wrong, "\n".join(wrong)


def test_the_mirror_check_sees_planted_misplacements(tmp_path: Path) -> None:
    package, tests = tmp_path / "git_harn", tmp_path / "tests"
    (package / "store").mkdir(parents=True)
    files = ["__init__.py", "conftest.py", "test_layout.py", "kit/__init__.py", "kit/harn.py",
             "store/__init__.py", "store/test_chain.py", "trust/__init__.py", "trust/test_env.py",
             "fixtures/make.py",
             "helpers.py", "kit/test_kit.py", "stores/__init__.py", "stores/test_x.py", "git/test_oid.py",
             "store/tools.py"]
    for name in files:
        (tests / name).parent.mkdir(parents=True, exist_ok=True)
        (tests / name).write_text("")
    assert misplaced(tests, package) == [
        "git/test_oid.py: its folder is no package (no __init__.py)",
        "git/test_oid.py: git_harn/git/ does not exist",
        "helpers.py: a shared module outside tests/kit/",
        "kit/test_kit.py: a test file in tests/kit/",
        "store/tools.py: a shared module outside tests/kit/",
        "stores/test_x.py: git_harn/stores/ does not exist",
    ]
