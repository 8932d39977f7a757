"""The archive (``refs/harnery/archive/runs``) in a sync: the five cases of a
chain, a check of what the remote adds, and the merge of two archives.

Archives only grow, so two are merged by union: every run either holds is
in the merge. A run both hold with different entries (two clones archived it
at different states) keeps the entry whose events include the other's tip
(the later state of one chain); when neither does (the chain diverged
before it was archived), the entry whose last event is later, then the
greater tip id, on every clone alike. A run one side dropped is kept from
the other: an archive entry is never lost by a merge. The merge keeps the
side with the lesser commit id as it is, batch lists included, and lists
what the other side adds as one new batch, so the merge commit is the same
on every clone that makes it (see docs/archive.md).
"""

from __future__ import annotations

from git_harn.errors import CorruptRecord, GitFailure, HarnError
from git_harn.git import Oid, Repo, to_oid
from git_harn.git.objects import BLOB_MODE, REGULAR_MODES
from git_harn.store import archive, chain
from git_harn.store.archive import ARCHIVE_REF, Archived
from git_harn.store.runs import RUNS
from git_harn.sync.steps import BadRemoteData, Step, plan_united

Tree = dict[str, str]  # path -> blob id


def plan(repo: Repo, local: str | None, remote: str | None, dry_run: bool) -> Step:
    return plan_united(repo, ARCHIVE_REF, local, remote, dry_run, lambda tip, mine: check(repo, tip, mine),
                       lambda mine, theirs, base: merge(repo, mine, theirs, base))


# --- what the remote adds -----------------------------------------------------------


def _tree(repo: Repo, tip: Oid | None) -> Tree:
    if tip is None:
        return {}
    found: Tree = {}
    for path, (blob, mode) in repo.flatten(tip).items():
        if mode not in REGULAR_MODES:
            raise BadRemoteData(f"archive commit {str(tip)[:12]}: {path} is not a file")
        found[path] = blob
    return found


def _run_id(path: str) -> str | None:
    """The run id an archive path names (None: not a run's entry)."""
    if not path.startswith(archive.RUNS_FOLDER + "/") or not path.endswith(".json"):
        return None
    run_id = path.rsplit("/", 1)[1][:-len(".json")]
    return run_id if archive.blob_path(run_id) == path else None


def _batch_path(path: str) -> bool:
    folder, _, name = path.partition("/")
    return path == archive.BATCHES_FILE or (
        folder == archive.BATCHES_FOLDER and len(name) == 13 and name[:8].isdigit() and name.endswith(".json"))


def check(repo: Repo, tip: Oid, mine: Oid | None) -> None:
    """Every commit ``tip`` adds is a commit; its tree holds only archive
    paths; every run entry it adds or changes is a valid record of its id
    (the rest this clone already checked)."""
    try:
        list(repo.walk(tip, [mine] if mine is not None else []))
    except GitFailure as exc:
        raise BadRemoteData(exc.message) from exc
    ours = _tree(repo, mine)
    for path, blob in _tree(repo, tip).items():
        run_id = _run_id(path)
        if run_id is None:
            if not _batch_path(path):
                raise BadRemoteData(f"archive head {str(tip)[:12]} holds {path!r}, which is no archive path")
            continue
        if ours.get(path) != blob:
            _entry(repo, run_id, blob)


def _entry(repo: Repo, run_id: str, blob: str) -> Archived:
    """A run's archive entry, checked: BadRemoteData when it is not one."""
    try:
        RUNS.check_id(run_id)
        raw = repo.read_blob(to_oid(blob))
        if len(raw) > chain.READ_LIMIT:
            raise CorruptRecord(f"archived run {run_id}: {len(raw)} bytes, too large")
        found = archive.parse(run_id, raw)
        found.stored()  # the record itself, by the run records' own check
    except HarnError as exc:
        raise BadRemoteData(exc.message) from exc
    return found


# --- the merge ------------------------------------------------------------------------


def _later(repo: Repo, run_id: str, one: str, other: str) -> str:
    """Of two entries of one run, the one the merge keeps."""
    first, second = _entry(repo, run_id, one), _entry(repo, run_id, other)
    if any(event[0] == second.tip for event in first.events):
        return one
    if any(event[0] == first.tip for event in second.events):
        return other
    return max((one, first), (other, second), key=lambda pair: (_last_time(pair[1]), pair[1].tip))[0]


def _last_time(entry: Archived) -> int:
    times = [event[1] for event in entry.events if isinstance(event[1], int)]
    return max(times, default=0)


def merge(repo: Repo, local: Oid, remote: Oid, base: Oid | None) -> Oid:
    """The merge commit of two archive heads (``base`` None: unrelated)."""
    first, second = sorted([local, remote], key=str)
    kept, other, before = _tree(repo, first), _tree(repo, second), _tree(repo, base)
    changes: dict[str, tuple[bytes | Oid, int]] = {}
    listed: list[tuple[str, str]] = []
    for path, theirs in sorted(other.items()):
        run_id, mine = _run_id(path), kept.get(path)
        if run_id is None or theirs == mine or (mine is not None and theirs == before.get(path)):
            continue  # not a run, the same, or changed on the kept side only
        if mine is not None and mine != before.get(path) and _later(repo, run_id, mine, theirs) == mine:
            continue  # changed on both sides: the kept side's entry is the later
        changes[path] = (to_oid(theirs), BLOB_MODE)
        listed.append((_updated(repo, run_id, theirs), run_id))
    if listed:
        changes.update(archive.batch_files(repo, first, listed))
    text = (f"archive: merged {str(first)[:12]} and {str(second)[:12]}\n\n"
            f"Runs taken from {str(second)[:12]}: {len(listed)}\n")
    return chain.merge_commit(repo, [first, second], changes, text, base=first)


def _updated(repo: Repo, run_id: str, blob: str) -> str:
    return str(_entry(repo, run_id, blob).stored().record.updatedAt)
