"""The layers stay layers: imports go down only, git stays in git/, click in commands/.

Folders are the layers (README, "How the code is laid out"). This test reads
every module's imports (statically, lazy ones inside functions included) and
fails on an upward import, an import across two packages of the same layer,
an import cycle, pygit2 or the git CLI outside ``git/``, and click outside
``commands/`` and the entry point.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from git_harn.errors import EXIT_FOR_OUTCOME
from git_harn.store.record import STATES

PACKAGE = Path(__file__).resolve().parent.parent / "git_harn"

# Rank of each layer; a module may import only from lower ranks (or its own package).
LAYERS = {
    "git": 1,
    "store": 2,
    "workspace": 3, "tasks": 3,
    "hooks": 4, "assess": 4, "integrate": 4,
    "workflow": 5, "sync": 5,
    "demo": 6,
    "commands": 7,
    "cli": 8, "__main__": 9,
}
SHARED = 0  # the helpers directly in git_harn/ (errors, results, text …)
MAX_TOP_LEVEL_MODULES = 12


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if "prompts" in parts or "agents" in parts:
            continue  # data and stand-alone scripts shipped in the package, not modules
        name = ".".join(("git_harn", *parts)).removesuffix(".__init__")
        found[name] = path
    return found


def layer_of(module: str) -> tuple[str, int]:
    parts = module.split(".")
    if len(parts) == 1:
        return "git_harn", SHARED
    head = parts[1]
    if head in LAYERS:
        return head, LAYERS[head]
    return "git_harn", SHARED  # the shared helpers may use each other (the cycle test still applies)


def imports_of(path: Path, module: str) -> list[tuple[str, int]]:
    """(imported module, line) for every import statement in the file."""
    tree = ast.parse(path.read_text(), str(path))
    out = []
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            out.append((base, node.lineno))
            out += [(f"{base}.{alias.name}", node.lineno) for alias in node.names]
    return out


def internal_edges() -> dict[str, set[str]]:
    mods = modules()
    edges: dict[str, set[str]] = {name: set() for name in mods}
    for name, path in mods.items():
        for target, _ in imports_of(path, name):
            if target in mods and target != name:
                edges[name].add(target)
    return edges


def test_the_package_top_holds_at_most_a_dozen_modules() -> None:
    top = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    assert len(top) <= MAX_TOP_LEVEL_MODULES, sorted(top)


def test_every_layer_folder_says_what_it_may_import() -> None:
    for folder in LAYERS:
        init = PACKAGE / folder / "__init__.py"
        if (PACKAGE / folder).is_dir():
            text = ast.get_docstring(ast.parse(init.read_text())) or ""
            assert "Layer" in text and "import" in text, f"{init} needs a docstring naming its layer"


def test_imports_go_down_only() -> None:
    wrong = []
    for source, targets in internal_edges().items():
        src_pkg, src_rank = layer_of(source)
        for target in targets:
            dst_pkg, dst_rank = layer_of(target)
            if src_pkg == dst_pkg:
                continue
            if dst_rank >= src_rank:
                wrong.append(f"{source} -> {target} (layer {src_rank} imports layer {dst_rank})")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles() -> None:
    edges = internal_edges()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append([*trail[trail.index(nxt):], nxt] if nxt in trail else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    # A package's __init__ importing its own modules is not a cycle of layers.
    real = [c for c in cycles if not any(m.count(".") < 2 for m in c[:-1]) or len(set(c)) > 2]
    assert not real, real


@pytest.mark.parametrize("library, allowed", [
    ("pygit2", ("git",)),
    ("click", ("commands", "cli")),
])
def test_libraries_stay_in_their_layer(library: str, allowed: tuple[str, ...]) -> None:
    wrong = []
    for name, path in modules().items():
        package, _ = layer_of(name)
        top = name.split(".")[1] if "." in name else name
        if package in allowed or top in allowed:
            continue
        for target, line in imports_of(path, name):
            if target == library or target.startswith(library + "."):
                wrong.append(f"{path.relative_to(PACKAGE)}:{line} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_only_the_git_layer_runs_git_or_touches_pygit2_objects() -> None:
    """``run_git``, ``Repo._git`` and ``Repo._pg`` belong to git/."""
    wrong = []
    for name, path in modules().items():
        if layer_of(name)[0] == "git":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("_pg", "_git", "pg"):
                wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno} uses .{node.attr}")
            if isinstance(node, ast.Name) and node.id == "run_git":
                wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno} calls run_git")
            if isinstance(node, ast.Constant) and node.value == "git" and _in_argv_list(node, tree):
                wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno} builds a git argv")
    assert not wrong, "\n".join(wrong)


def _in_argv_list(constant: ast.Constant, tree: ast.AST) -> bool:
    """Whether ``"git"`` is the first word of a list literal (an argv)."""
    return any(isinstance(node, ast.List) and bool(node.elts) and node.elts[0] is constant
               for node in ast.walk(tree))


def test_the_layout_test_sees_a_wrong_import(tmp_path: Path) -> None:
    """The checker itself can fail: an upward import is reported."""
    fake = tmp_path / "mod.py"
    fake.write_text("from git_harn.commands.render import show\n")
    assert ("git_harn.commands.render", 1) in imports_of(fake, "git_harn.store.mod")
    assert layer_of("git_harn.commands.render")[1] > layer_of("git_harn.store.mod")[1]


# The git layer speaks git only: refs, objects, worktrees, config, remotes.
# Which refs are git-harn's records (refs/harnery/*, its tracking and staging
# folders) is known from store/ upwards.
NAMESPACE_WORD = "refs/harnery"


def namespace_mentions(path: Path) -> list[str]:
    """The lines of ``path`` that name one of git-harn's ref namespaces."""
    lines = path.read_text().splitlines()
    return [f"{path.name}:{number}: {line.strip()}" for number, line in enumerate(lines, 1)
            if NAMESPACE_WORD in line]


def test_the_git_layer_names_no_namespace_of_git_harn() -> None:
    wrong = [hit for name, path in modules().items() if layer_of(name)[0] == "git"
             for hit in namespace_mentions(path)]
    assert not wrong, "\n".join(wrong)


def test_the_namespace_check_sees_a_planted_mention(tmp_path: Path) -> None:
    """The checker itself can fail: a namespace named in code, in a string
    built at run time, or in a comment is reported."""
    planted = tmp_path / "planted.py"
    planted.write_text('PREFIX = "refs/harnery/claims/"\n'
                       'def ref(x: str) -> str:\n    return f"refs/harnery-remotes/{x}"\n'
                       "# keeps refs/harnery/notes\nOK = 'refs/heads/'\n")
    assert [hit.split(":")[1] for hit in namespace_mentions(planted)] == ["1", "3", "4"]


# One spelling for enumerated values (README, "How values are spelled"):
# kebab-case, but for the workspace states as SPEC §3 names them.
KEBAB = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
SCHEMAS = PACKAGE.parent / "schemas"
# Words of a document git-harn reads but does not write: an ExecPlan's Status line.
FOREIGN_ENUMS = ("planStatus",)


def misspelled(values: list[tuple[str, str]]) -> list[str]:
    """The (where, value) pairs whose value breaks the one spelling."""
    return [f"{where}: {value!r}" for where, value in values
            if value not in STATES and not KEBAB.fullmatch(value)]


def schema_enums(node: object, where: str) -> list[tuple[str, str]]:
    if isinstance(node, list):
        return [found for item in node for found in schema_enums(item, where)]
    if not isinstance(node, dict):
        return []
    found = [(where, value) for value in node.get("enum", []) if isinstance(value, str)]
    return found + [item for key, value in node.items() if key not in FOREIGN_ENUMS
                    for item in schema_enums(value, f"{where}/{key}")]


def test_outcomes_and_schema_values_are_kebab_case_but_the_spec_states() -> None:
    values = [("errors.EXIT_FOR_OUTCOME", outcome) for outcome in EXIT_FOR_OUTCOME]
    for path in sorted(SCHEMAS.glob("*.schema.json")):
        values += schema_enums(json.loads(path.read_text()), path.name)
    assert len(values) > 100  # the check reads every schema
    assert not misspelled(values), "\n".join(misspelled(values))


def test_the_spelling_check_sees_a_planted_value() -> None:
    planted = [("x", "dry_run"), ("x", "Gates-Passed"), ("x", "gates-passed"), ("x", "already_gone")]
    assert misspelled(planted) == ["x: 'dry_run'", "x: 'Gates-Passed'"]
