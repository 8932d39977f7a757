"""The layers stay layers: imports go down only, git stays in git/, click in commands/.

Folders are the layers (docs/code-layout.md). This test reads
every module's imports (statically, lazy ones inside functions included) and
fails on an upward import, an import across two packages of the same layer,
an import cycle, pygit2 or the git CLI outside ``git/``, click outside
``commands/`` and the entry point, a pass-through or re-export in
``workflow/``, and a word of a vocabulary compared outside the module that
owns it. Each check has a test of its own that a
planted violation fails it.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection
from pathlib import Path

import pytest

from git_harn.errors import EXIT_FOR_OUTCOME
from git_harn.store.record import STATES
from git_harn.tasks.config import Stage
from git_harn.workflow.model.state import FAULTS, STATUSES, SkipReason, State

PACKAGE = Path(__file__).resolve().parent.parent / "git_harn"

# Rank of each layer; a module may import only from lower ranks (or its own package).
LAYERS = {
    "git": 1,
    "store": 2,
    "workspace": 3, "tasks": 3, "forge": 3,
    "hooks": 4, "assess": 4, "integrate": 4,
    "workflow": 5, "sync": 5,
    "demo": 6, "doctor": 6,
    "commands": 7,
    "cli": 8, "__main__": 9,
}
SHARED = 0  # the helpers directly in git_harn/ (errors, results, text …)
MAX_TOP_LEVEL_MODULES = 12
# Stand-alone scripts shipped in the package: run as programs (they drive git
# in a worktree, as any agent does), never imported, importing nothing of git_harn.
SCRIPT_FOLDERS = ("demo/agents",)


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    found = {}
    for path in sorted(root.rglob("*.py")):
        if _script(path, root):
            continue
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(("git_harn", *parts)).removesuffix(".__init__")
        found[name] = path
    return found


def _script(path: Path, root: Path = PACKAGE) -> bool:
    """In one of the named script folders exactly, not any folder that shares its name."""
    return path.parent.relative_to(root).as_posix() in SCRIPT_FOLDERS


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
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolved(node, path, module)
            out.append((base, node.lineno))
            out += [(f"{base}.{alias.name}", node.lineno) for alias in node.names]
    return out


def internal_edges(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules it imports. ``from pkg import mod`` of a
    submodule is an edge to ``mod`` only: it names no member of ``pkg``'s
    ``__init__``, so it is no dependency on what that file defines."""
    mods = modules(root)
    edges: dict[str, set[str]] = {name: set() for name in mods}
    for name, path in mods.items():
        found = imports_of(path, name)
        submodule_only = _from_submodules_only(path, name, set(mods))
        for target, line in found:
            if target in mods and target != name and (target, line) not in submodule_only:
                edges[name].add(target)
    return edges


def _from_submodules_only(path: Path, module: str, mods: set[str]) -> set[tuple[str, int]]:
    """(package, line) of each ``from package import a, b`` where a and b are all submodules."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            base = _resolved(node, path, module)
            if node.names and all(f"{base}.{alias.name}" in mods for alias in node.names):
                out.add((base, node.lineno))
    return out


def _resolved(node: ast.ImportFrom, path: Path, module: str) -> str:
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    base = node.module or ""
    if node.level:
        anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    return base


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


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle a depth-first walk meets, as the modules around it."""
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
    return cycles


def test_no_import_cycles() -> None:
    cycles = find_cycles(internal_edges())
    assert not cycles, cycles


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
        wrong += [f"{path.relative_to(PACKAGE)}:{line} {what}" for line, what in git_access(path.read_text())]
    assert not wrong, "\n".join(wrong)


def git_access(source: str) -> list[tuple[int, str]]:
    """(line, what) for each way ``source`` reaches git past the git layer."""
    tree = ast.parse(source)
    git_names = _names_of_git(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("_pg", "_git", "pg"):
            found.append((node.lineno, f"uses .{node.attr}"))
        if isinstance(node, ast.Name) and node.id == "run_git":
            found.append((node.lineno, "calls run_git"))
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts and _is_git(node.elts[0], git_names):
            found.append((node.lineno, "builds a git argv"))
    return found


def _names_of_git(tree: ast.AST) -> set[str]:
    """Names bound to the string ``"git"`` (``GIT = "git"``): an argv built from one is a git argv."""
    names = set()
    for node in ast.walk(tree):
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, ast.Constant) and value.value == "git":
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[union-attr]
            names |= {t.id if isinstance(t, ast.Name) else t.attr for t in targets
                      if isinstance(t, (ast.Name, ast.Attribute))}
    return names


def _is_git(first: ast.expr, git_names: set[str]) -> bool:
    """The first word of an argv literal is git: the string, or a name bound to it."""
    if isinstance(first, ast.Constant):
        return first.value == "git"
    if isinstance(first, ast.Name):
        return first.id in git_names
    return isinstance(first, ast.Attribute) and first.attr in git_names


# The rooms of workflow/ (docs/code-layout.md): a room may import only from
# lower ranks. page/ and after/ share nothing, so their order is the reader's.
ROOMS = {"model": 1, "agents": 2, "ledger": 3, "task": 4, "after": 5, "page": 6, "run": 7}


def room_of(module: str) -> tuple[str, int] | None:
    """(room, rank) of a module inside workflow/, None outside it or for the package itself."""
    parts = module.split(".")
    if parts[:2] != ["git_harn", "workflow"] or len(parts) < 3:
        return None
    if parts[2] not in ROOMS:
        return (parts[2], 0)  # a module of no room: reported by the test below
    return parts[2], ROOMS[parts[2]]


def room_arrows_up(edges: dict[str, set[str]]) -> list[str]:
    """Every import of a room from a room of the same or a higher rank."""
    wrong = []
    for source, targets in edges.items():
        src = room_of(source)
        for target in targets:
            dst = room_of(target)
            if src and dst and src[0] != dst[0] and dst[1] >= src[1]:
                wrong.append(f"{source} -> {target} (room {src[0]} imports room {dst[0]})")
    return wrong


def test_workflow_rooms_import_down_only() -> None:
    assert not room_arrows_up(internal_edges()), "\n".join(room_arrows_up(internal_edges()))


def test_every_workflow_module_lives_in_a_room() -> None:
    flat = [name for name in modules() if (room_of(name) or ("", 1))[1] == 0]
    assert not flat, flat
    rooms = {p.name for p in (PACKAGE / "workflow").iterdir() if (p / "__init__.py").is_file()}
    assert rooms == set(ROOMS), rooms ^ set(ROOMS)


def test_the_room_check_sees_a_planted_arrow_up(tmp_path: Path) -> None:
    root = _package(tmp_path / "git_harn", {
        "__init__.py": "", "workflow/__init__.py": "",
        "workflow/model/__init__.py": "", "workflow/model/state.py": "from git_harn.workflow.run import runner\n",
        "workflow/run/__init__.py": "", "workflow/run/runner.py": "from git_harn.workflow.model import state\n",
        "workflow/task/__init__.py": "", "workflow/task/pipeline.py": "from git_harn.workflow.after import settle\n",
        "workflow/after/__init__.py": "", "workflow/after/settle.py": "from git_harn.workflow.task import pipeline\n"})
    assert sorted(room_arrows_up(internal_edges(root))) == [
        "git_harn.workflow.model.state -> git_harn.workflow.run.runner (room model imports room run)",
        "git_harn.workflow.task.pipeline -> git_harn.workflow.after.settle (room task imports room after)"]


def test_the_layout_test_sees_a_wrong_import(tmp_path: Path) -> None:
    """The checker itself can fail: an upward import is reported."""
    fake = tmp_path / "mod.py"
    fake.write_text("from git_harn.commands.render import show\n")
    assert ("git_harn.commands.render", 1) in imports_of(fake, "git_harn.store.mod")
    assert layer_of("git_harn.commands.render")[1] > layer_of("git_harn.store.mod")[1]


# --- the checks can fail: planted violations (issue 23 item 15) -----------------------


@pytest.mark.parametrize("source", [
    'import subprocess\nsubprocess.run(["git", "reset", "--hard"])\n',
    'import subprocess\nsubprocess.run(("git", "reset", "--hard"))\n',
    'GIT = "git"\ndef reset(run):\n    run((GIT, "reset", "--hard"))\n',
    'GIT: str = "git"\nARGV = [GIT, "status"]\n',
    'class C:\n    GIT = "git"\n    def argv(self):\n        return [self.GIT, "push"]\n',
    'def argv(args):\n    return ("git",) + tuple(args)\n',
    'from git_harn.git.proc import run_git\nrun_git(("status",), ".")\n',
    'def peek(repo):\n    return repo._pg.head\n',
])
def test_the_git_check_sees_a_planted_git_argv(source: str) -> None:
    assert git_access(source), source


def test_the_git_check_leaves_other_argv_alone() -> None:
    assert git_access('ARGV = ["gitk", "--all"]\nWORDS = ("a", "git")\nNAME = "git"\n') == []


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_cycle_check_sees_a_planted_cycle_of_two_top_level_helpers(tmp_path: Path) -> None:
    root = _package(tmp_path / "git_harn", {"__init__.py": "", "text.py": "from git_harn.files import MAX\n",
                                            "files.py": "from git_harn.text import one\n"})
    assert find_cycles(internal_edges(root)) == [["git_harn.files", "git_harn.text", "git_harn.files"]]


def test_the_cycle_check_sees_a_submodule_that_uses_its_package_init(tmp_path: Path) -> None:
    root = _package(tmp_path / "git_harn", {
        "__init__.py": "", "workflow/__init__.py": "from git_harn.workflow.host import Task\n",
        "workflow/host.py": "from git_harn.workflow import HELPER\n",
        "workflow/agents/stages.py": "from git_harn.workflow import host\n"})  # a submodule only: no cycle
    assert find_cycles(internal_edges(root)) == [["git_harn.workflow", "git_harn.workflow.host", "git_harn.workflow"]]


def test_only_the_named_script_folders_are_skipped(tmp_path: Path) -> None:
    root = _package(tmp_path / "git_harn", {
        "__init__.py": "", "demo/agents/plan.py": "import subprocess\n",
        "workflow/agents/evil.py": "from git_harn.commands import render\n",
        "workflow/prompts/evil.py": "import pygit2\n"})
    found = modules(root)
    assert "git_harn.workflow.agents.evil" in found and "git_harn.workflow.prompts.evil" in found
    assert "git_harn.demo.agents.plan" not in found


def test_the_shipped_scripts_are_stand_alone() -> None:
    """What is skipped as a script really is one: it imports nothing of git_harn."""
    scripts = [p for p in PACKAGE.rglob("*.py") if _script(p)]
    assert scripts
    for path in scripts:
        assert not [t for t, _ in imports_of(path, "script") if t.split(".")[0] == "git_harn"], path


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


# One remote door: every fetch, push and ls-remote is run by git/remote.py,
# which reads git's messages with one table.
REMOTE_VERBS = re.compile(r"""[\[(,]\s*["'](push|fetch|ls-remote)["']""")


def remote_argv(path: Path) -> list[str]:
    """The lines of ``path`` that start a git argv talking to a remote."""
    lines = path.read_text().splitlines()
    return [f"{path.name}:{number}: {line.strip()}" for number, line in enumerate(lines, 1)
            if REMOTE_VERBS.search(line)]


def test_only_the_remote_door_talks_to_a_remote() -> None:
    door = PACKAGE / "git" / "remote.py"
    wrong = [hit for path in modules().values() if path != door for hit in remote_argv(path)]
    assert not wrong, "\n".join(wrong)
    assert remote_argv(door), "the door itself is seen"


def test_the_remote_check_sees_a_planted_push(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('run_git(["push", "-q", "origin", "main"], cwd)\nARGV = ("fetch", remote)\n'
                       "args = [GIT, 'ls-remote', url]\nwords = \"push it\"\n")
    assert [hit.split(":")[1] for hit in remote_argv(planted)] == ["1", "2", "3"]


# One spelling for enumerated values (docs/code-layout.md, "How values are spelled"):
# kebab-case, but for the workspace states as the rules name them [W3].
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


# The workflow has no door module: each of its modules imports what it uses
# from where it lives, so none holds a pass-through (a function whose body
# only calls another with its own arguments) or a re-export (``X = mod.X``,
# ``__all__``) of a lower layer's name.
def passthroughs(source: str) -> list[str]:
    """What of ``source`` only hands a name of another module on."""
    tree = ast.parse(source)
    imported: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imported |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _only_passes_on(node):
            found.append(f"{node.lineno}: {node.name} only calls another function with its arguments")
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value, name = node.value, node.targets[0].id
            root = value.value if isinstance(value, ast.Attribute) else value
            if name == "__all__" or (isinstance(root, ast.Name) and root.id in imported):
                found.append(f"{node.lineno}: {name} re-exports {ast.unparse(value)}")
    return found


def _only_passes_on(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if len(body) != 1 or not isinstance(body[0], (ast.Return, ast.Expr)) or not isinstance(body[0].value, ast.Call):
        return False
    call = body[0].value
    given = [*call.args, *(keyword.value for keyword in call.keywords)]
    params = [a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)]
    return all(isinstance(arg, ast.Name) for arg in given) and [arg.id for arg in given] == params  # type: ignore[attr-defined]


def test_the_workflow_has_no_door_of_pass_throughs() -> None:
    assert not (PACKAGE / "workflow" / "host.py").exists()
    wrong = [f"{path.relative_to(PACKAGE)}:{hit}" for name, path in modules().items()
             if layer_of(name)[0] == "workflow" for hit in passthroughs(path.read_text())]
    assert not wrong, "\n".join(wrong)


def test_the_pass_through_check_sees_a_planted_door() -> None:
    planted = ("from git_harn.tasks import roadmap as _roadmap\nfrom git_harn.git.worktrees import ADMIN_LOCKS\n"
               "Task = _roadmap.Task\nLOCKS = ADMIN_LOCKS\n__all__ = ['Task']\n"
               "def unblocked(tasks):\n    return _roadmap.unblocked(tasks)\n"
               "def slug(task_id, n=None):\n    \"\"\"Says why.\"\"\"\n    return _roadmap.slug(task_id, n=n)\n"
               "def gate_timeout(repo):\n    return _roadmap.timeout(repo, None)\n"
               "LIMIT = 16 << 20\n")
    assert [hit.split(":")[0] for hit in passthroughs(planted)] == ["3", "4", "5", "6", "8"]


# One word, one owner (issue 48): a word of a vocabulary (a stage's name, a skip
# reason, a task's state or status, a fault class, a workspace's state) is compared
# (==, !=, in a literal tuple, list or set) only in the module that owns it;
# elsewhere code names the member or constant, so a word is spelled where it is declared.
VOCABULARIES = {
    "tasks/config.py": [s.value for s in Stage],
    "workflow/model/state.py": [*(s.value for s in State), *STATUSES, *(r.value for r in SkipReason), *FAULTS],
    "store/record.py": list(STATES),
}
# Where a word of another vocabulary is spelled like one of these, and what it is there.
OTHER_VOCABULARIES = {
    ("store/seal.py", "config"): "git's config subcommand, which the seal's guard watches",
    ("workflow/ledger/record.py", "integrate"): "the git harn subcommand an advised command names",
}


def vocabulary() -> dict[str, set[str]]:
    """Every word of the vocabularies, with the module(s) that own it."""
    owned: dict[str, set[str]] = {}
    for owner, words in VOCABULARIES.items():
        for word in words:
            owned.setdefault(word, set()).add(owner)
    return owned


def bare_words(source: str, words: Collection[str]) -> list[tuple[int, str]]:
    """(line, word) for each vocabulary word ``source`` compares as a literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        if not any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops):
            continue
        for side in (node.left, *node.comparators):
            found += [(node.lineno, word) for word in _literal_strings(side) if word in words]
    return found


def _literal_strings(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def misplaced_words(root: Path = PACKAGE) -> list[str]:
    owned = vocabulary()
    wrong = []
    for path in modules(root).values():
        where = path.relative_to(root).as_posix()
        wrong += [f"{where}:{line}: {word!r} (owned by {', '.join(sorted(owned[word]))})"
                  for line, word in bare_words(path.read_text(), owned)
                  if where not in owned[word] and (where, word) not in OTHER_VOCABULARIES]
    return wrong


def test_no_vocabulary_word_is_compared_outside_its_owner() -> None:
    assert all((PACKAGE / owner).is_file() for owner in VOCABULARIES)
    assert {"integrate", "halted", "max-tasks", "tamper", "already_gone"} <= set(vocabulary())
    wrong = misplaced_words()
    assert not wrong, "\n".join(wrong)


def test_the_vocabulary_check_sees_planted_words(tmp_path: Path) -> None:
    root = _package(tmp_path / "git_harn", {
        "__init__.py": "",
        "workflow/run/planted.py": ('def f(tr, stage, reason, fault, s):\n'
                                    '    a = stage == "integrate"\n'
                                    '    b = tr.status != "done"\n'
                                    '    c = reason in ("max-tasks", "other")\n'
                                    '    d = "provider" == fault\n'
                                    '    e = s in {"writing-addendum"}\n'
                                    '    g = s.get("state") not in ["already_gone"]\n'
                                    '    return stage == Stage.INTEGRATE or s == "unrelated" or "review" + s\n'),
        "tasks/config.py": 'def f(stage):\n    return stage == "preflight"\n',  # its owner may
        "workflow/model/state.py": 'def f(status):\n    return status == "halted"\n',
        "store/seal.py": 'def f(command):\n    return command == "config"\n'})  # git's word there
    assert [hit.split(":")[1] for hit in misplaced_words(root)] == ["2", "3", "4", "5", "6", "7"]
