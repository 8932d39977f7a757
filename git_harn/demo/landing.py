"""``git harn demo --workflow --land pull-request``: the same roadmap landed
through merge requests on a local "forge" [F1] [F2].

The bare ``origin`` acts as GitLab would: its post-receive hook
(``agents/forge_hook.py``) opens a merge request for a push with push
options and prints its address; no network, no token. The first run
proposes 1.1 and 1.3 (1.2 waits for 1.1) and lands nothing on ``main``; a
maintainer then merges 1.1's request with a merge commit and squash-merges
1.3's on the forge; the next run sees both merged by content, marks them
done, and proposes 1.2.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from git_harn.demo.basic import Say, harn
from git_harn.demo.workflow import AGENTS, GATE, ROADMAP_FILE, UPSTREAM
from git_harn.git import Oid, Repo, open_repo
from git_harn.git.branches import fetch_branch
from git_harn.git.identity import signature
from git_harn.git.remote import Update, ls_remote, push
from git_harn.git.scratch import file_text, init_repository, oneline_log

ROADMAP = """\
# Roadmap

- [ ] 1.1 Add a greeting
- [ ] 1.2 Greet by name
  Requires: 1.1
- [ ] 1.3 Document the greeting
"""
FORGE = "https://gitlab.example"


def config_text() -> str:
    def argv(*words: str) -> str:
        return "[" + ", ".join(json.dumps(word) for word in words) + "]"

    py = sys.executable
    return (
        "# The demo's workflow, landing by merge request on a local GitLab stand-in.\n"
        f'[workflow]\nparallel = 2\nstageTimeout = 60\nland = "pull-request"\nforge = "gitlab"\n'
        f'forgeUrl = "{FORGE}"\n\n'
        f"[agents.plan]\ncommand = {argv(py, str(AGENTS / 'plan.py'))}\n\n"
        f"[agents.implement]\ncommand = {argv(py, str(AGENTS / 'implement.py'))}\n\n"
        f"[agents.review]\ncommand = {argv(py, str(AGENTS / 'review.py'))}\n\n"
        f"[gates]\ncommands = [{argv(py, '-c', GATE)}]\n"
    )


def make_forge(root: Path) -> Path:
    """The project, and its bare ``origin`` acting as GitLab (push options, a post-receive hook)."""
    project = init_repository(root / "project", {
        "app.py": "def main():\n    print('hi')\n", "README.md": "# demo project\n", ".gitignore": "__pycache__/\n",
        ROADMAP_FILE: ROADMAP, ".harn/workflow.toml": config_text(),
    }, {"user.name": "Demo Operator", "user.email": "operator@example.com",
        "harn.worktreeRoot": str(root / "worktrees")},
        message="Roadmap and workflow configuration", bare_remote=root / "origin.git")
    bare = root / "origin.git"
    open_repo(bare).ensure_config_value("receive.advertisePushOptions", "true")
    hook = bare / "hooks" / "post-receive"
    hook.write_text(f"#!/bin/sh\nexec {json.dumps(sys.executable)} {json.dumps(str(AGENTS / 'forge_hook.py'))}\n")
    hook.chmod(0o755)
    return project


def merge_on_forge(project: Path, branch: str, squash: bool) -> Oid:
    """What a maintainer's merge button does: ``branch`` merged into main on
    the forge, with a merge commit, or squashed into one commit with the
    squash's own message (GitLab's default for a one-commit request)."""
    repo = open_repo(project)
    main = fetch_branch(repo, "origin", "main")
    theirs = fetch_branch(repo, "origin", branch, write_ref=False)
    parent = repo.commit_info(theirs).parents[0]
    tree = repo.merge_trees(parent, main, theirs)
    assert not isinstance(tree, list), tree
    who = signature("Demo Maintainer", "maintainer@example.com")
    message = repo.commit_info(theirs).message if squash else f"Merge branch '{branch}' into 'main'\n"
    commit = repo.make_commit(tree, [main] if squash else [main, theirs], message, who)
    pushed = push(repo, "origin", [Update("refs/heads/main", str(commit), str(main))], lease=True)
    assert pushed.ok, pushed.told()
    return commit


def landing_branches(repo: Repo) -> list[str]:
    return sorted(name.removeprefix("refs/heads/") for name in ls_remote(repo, "origin", ["refs/heads/harnery/*"]))


def run_landing_demo(say: Say) -> Path:
    root = Path(tempfile.mkdtemp(prefix="git-harn-demo-"))
    project = make_forge(root)
    bare = root / "origin.git"
    say.say(f"demo repository: {project} (origin: {bare}, whose hooks act as GitLab: a push with push options "
            "opens a merge request, recorded in requests.json; no network)")
    say.show(ROADMAP.rstrip("\n"))
    say.say('\n.harn/workflow.toml says land = "pull-request": each judged squash goes to git-harn\'s own '
            "landing branch harnery/land/<id> and a merge request, never onto main.")
    harn(project, say, "workflow", "run")
    repo = open_repo(project)
    say.say(f"\n{UPSTREAM} did not move; the landing branches and the forge's requests:")
    say.show(oneline_log(project, UPSTREAM))
    say.show("\n".join(landing_branches(repo)))
    say.show((bare / "requests.json").read_text().rstrip())
    say.say("\nuntil the forge merges or closes them, every run holds both (skipped as proposed, never failed), "
            "and 1.2 waits for 1.1; the listing names each request:")
    harn(project, say, "workflow", "list")
    say.say("\nthe maintainer merges 1.1's request with a merge commit and squash-merges 1.3's, on the forge:")
    merge_on_forge(project, "harnery/land/1.1", squash=False)
    merge_on_forge(project, "harnery/land/1.3", squash=True)
    say.say("\nthe next run reconciles first: both merged (by content: no token was given), so both are done and "
            "their landing branches go; 1.1 is ticked on main, so 1.2 starts and is proposed in turn:")
    harn(project, say, "workflow", "run")
    fetch_branch(repo, "origin", "main")
    say.say("")
    say.command(f"git show {UPSTREAM}:{ROADMAP_FILE}")
    say.show(file_text(project, UPSTREAM, ROADMAP_FILE))
    say.say(f"\nthe demo repository stays at {project}; delete {root} when done.")
    return project
