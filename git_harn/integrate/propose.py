"""Land through a pull request [F1]: what ``integrate`` does up to the
squash (the judged commit rebased onto the fetched base, one commit with the
task's box ticked and the same trailers), then that commit pushed to
git-harn's own landing branch (``harnery/land/<key>``, with a lease; never
the base) and a request opened from it, or the one already open found.

Every step is kept before the next one runs, so a rerun after a crash at any
point finishes the same proposal, never a second one: the squash and what it
came from are kept and recorded (``proposing``) before the push; the push
moves the landing branch from the value the remote holds; the door finds the
request an earlier attempt opened; the record then says ``open`` with its URL
and number. Nothing is pushed to the base, so no crash marker is needed: a
rerun cannot land twice [I4].
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from git_harn.clock import now_iso
from git_harn.errors import HarnError
from git_harn.failpoints import failpoint
from git_harn.git import Oid, Repo, to_oid
from git_harn.git.checkout import commit_tree
from git_harn.integrate import door
from git_harn.integrate.attempt import squash
from git_harn.integrate.report import PROPOSED, IntegrationReport, new_report
from git_harn.integrate.target import Target
from git_harn.integrate.worktree import ensure_worktree
from git_harn.store import proposals
from git_harn.tasks.roadmap import Task, roadmap_file, tick_item
from git_harn.text import one_line

TITLE_LIMIT = 200
BODY_LIMIT = 8000  # characters of a request's description: a forge's field, and a push option's line


def propose_target(repo: Repo, target: Target, key: str, task: Task, base: Oid,
                   run: dict[str, str]) -> IntegrationReport:
    """Propose ``target`` (under the merge lock, the base fetched as ``base``).
    ``run``: the workflow and run ids that proposed it, kept in the record."""
    record = proposals.read(repo, key)
    if record is None or record["state"] not in (proposals.PROPOSING, proposals.OPEN) \
            or record.get("judged") != str(target.judged):
        made = squash(repo, target, ensure_worktree(repo, base), base, task, 1)
        if isinstance(made, IntegrationReport):
            return made
        commit, tip = made
        record = _record_squash(repo, target, key, base, commit, tip, task, run)
        # the squash is kept with the proposal: the throwaway branch that pointed at it goes [P1]
        with suppress(HarnError):
            repo.delete_ref(f"refs/heads/{target.work_branch}", commit)
    return open_recorded(repo, target, record)


def _record_squash(repo: Repo, target: Target, key: str, base: Oid, commit: Oid, tip: Oid, task: Task,
                   run: dict[str, str]) -> dict[str, Any]:
    """Keep the squash, the judged commit and the rebased tip, then record
    the proposal as ``proposing``: before anything leaves this clone."""
    for what, oid in (("squash", commit), ("judged", target.judged), ("tip", tip)):
        proposals.keep(repo, key, what, oid)
    title, body = request_text(repo, target, commit, task)
    body_doc = {"key": key, "taskId": target.task_id, "addendum": target.addendum, "state": proposals.PROPOSING,
                "remote": target.remote, "base": target.base, "branch": target.branch,
                "landingBranch": door.landing_branch(key), "forge": None, "url": None, "number": None,
                "forgeName": target.forge, "forgeUrl": target.forge_url, "autoMerge": target.auto_merge,
                "head": str(commit), "judged": str(target.judged), "tip": str(tip), "baseOid": str(base),
                "title": title, "body": body, "words": "", **run}
    return proposals.write(repo, body_doc, proposals.PROPOSING, f"squash {str(commit)[:12]} of {target.branch}")


def open_recorded(repo: Repo, target: Target, record: dict[str, Any]) -> IntegrationReport:
    """Push the recorded squash to the landing branch and open (or find) its
    request; the record then says ``open``. Idempotent."""
    return proposed_report(target, finish(repo, record))


def finish(repo: Repo, record: dict[str, Any]) -> dict[str, Any]:
    """The recorded proposal pushed and its request opened or found (the
    landing branch moved from what the remote holds: git-harn's own); the
    record as it is after that. What a rerun after a crash at any point does."""
    if record["state"] == proposals.OPEN:
        return record  # pushed and opened: asking again would only find it
    key, head, remote = str(record["key"]), to_oid(str(record["head"])), str(record["remote"])
    where = door.Where(remote, record.get("forgeName"), record.get("forgeUrl"), bool(record.get("autoMerge")))
    opened = door.open_request(repo, where, key, str(record["base"]), head, door.remote_landing(repo, remote, key),
                               str(record["title"]), str(record["body"]))
    failpoint("propose-after-open")
    # a forge asked again may not say the URL it gave the first time (a push option's answer)
    return proposals.write(repo, dict(record, state=proposals.OPEN, forge=opened.forge,
                                      url=opened.url or record.get("url"),
                                      number=opened.number or record.get("number"),
                                      openedAt=record.get("openedAt") or now_iso(),
                                      autoMerged=opened.auto_merge),
                           proposals.OPEN, f"{opened.url or door.landing_branch(key)}")


def proposed_report(target: Target, record: dict[str, Any]) -> IntegrationReport:
    where = record.get("url") or f"{target.remote} {record['landingBranch']}"
    return new_report(target, 1, rebased=True, squashMerged=True, roadmapMarkedDone=True,
                      commit=str(record["head"]), outcome=PROPOSED, judged=str(target.judged),
                      rebasedTip=record["tip"] if record["tip"] != str(target.judged) else None,
                      proposal=proposal_of(record),
                      summary=(f"{target.branch} proposed to {target.upstream} as {where} "
                               f"({str(record['head'])[:12]}); nothing landed on {target.upstream}: "
                               "the next run reconciles it once the request is merged or closed"))


def proposal_of(record: dict[str, Any]) -> dict[str, Any]:
    """What a task's result and report say of its request."""
    return {"forge": record.get("forge") or door.PLAIN, "url": record.get("url"), "number": record.get("number"),
            "head": record["head"], "branch": record["landingBranch"], "state": record["state"],
            "autoMerge": record.get("autoMerged")}


def request_text(repo: Repo, target: Target, commit: Oid, task: Task) -> tuple[str, str]:
    """The request's title (the squash's subject) and body (its message,
    then what the caller adds: the workflow's evidence), one printable
    title line and a bounded body."""
    message = repo.commit_info(commit).message
    subject, _, rest = message.partition("\n")
    title = one_line(printable_text(subject), TITLE_LIMIT) or f"Task {task.id}"
    body = (rest.strip() + ("\n\n" + target.body.strip() if target.body.strip() else ""))
    return title, printable_text(body[:BODY_LIMIT], keep="\n")


def printable_text(text: str, keep: str = "") -> str:
    """``text`` with every character that is not printable (a NUL, an escape
    sequence's, a carriage return) a space, but those in ``keep``: agents
    wrote part of it (a reviewer's summary, the ExecPlan), and a NUL would
    make it no push option at all, failing the judged work's proposal [F1]."""
    return "".join(c if c.isprintable() or c in keep else " " for c in text)




def applies(repo: Repo, record: dict[str, Any], base: Oid) -> bool:
    """Whether the proposed squash still merges cleanly onto ``base``."""
    return not isinstance(repo.merge_trees(to_oid(str(record["baseOid"])), base, to_oid(str(record["head"]))), list)


def rebuild(repo: Repo, record: dict[str, Any], base: Oid) -> dict[str, Any] | list[str]:
    """The squash made again on ``base`` (which it no longer merges onto
    cleanly) and the landing branch moved to it with a lease on the squash it
    held, the same request updated [F2]; or the paths that conflict. The
    roadmap is taken from ``base`` and the task's box ticked there again, so
    two proposals that ticked neighbouring lines never conflict on it."""
    head, before = to_oid(str(record["head"])), to_oid(str(record["baseOid"]))
    roadmap = roadmap_file(repo)
    old = repo.entry(before, roadmap)
    theirs = repo.tree_with(head, {roadmap: old}) if old is not None else repo.tree_id(head)
    merged = repo.merge_trees(before, base, theirs)
    if isinstance(merged, list):
        return merged
    now = repo.entry(base, roadmap)
    if now is not None:
        text = (repo.read_blob(now[0]) or b"").decode("utf-8", "surrogateescape")
        ticked, _ = tick_item(text, str(record["taskId"]), record.get("addendum"))
        merged = repo.tree_with(merged, {roadmap: (ticked.encode("utf-8", "surrogateescape"), now[1])})
    message = repo.commit_info(head).message
    commit = commit_tree(repo.cli_cwd, merged, base, message, sign=repo.config_bool("commit.gpgSign", False))
    key = str(record["key"])
    proposals.keep(repo, key, "squash", commit)
    where = door.Where(str(record["remote"]), record.get("forgeName"), record.get("forgeUrl"))
    opened = door.open_request(repo, where, key, str(record["base"]), commit, head, str(record["title"]),
                               str(record["body"]))
    return proposals.write(repo, dict(record, state=proposals.OPEN, head=str(commit), baseOid=str(base),
                                      rebuiltFrom=str(head), words="",
                                      url=opened.url or record.get("url"),
                                      number=opened.number or record.get("number")),
                           "rebuilt", f"{str(head)[:12]} rebuilt on {str(base)[:12]} as {str(commit)[:12]}")
