"""The one safe way to write and read files in folders an agent can write
(issue 28, item 1): a link planted at the path is replaced or refused,
never followed [P5]."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from git_harn.errors import TooLarge
from git_harn.files import UnsafeFile, atomic_write, create_private, private_dir, read_private, unlink_entry
from tests.kit.victims import VICTIM, victims


def _atomic(path: Path, data: bytes) -> None:
    atomic_write(path, data)


def _created(path: Path, data: bytes) -> None:
    with create_private(path) as handle:
        handle.write(data)


@pytest.mark.parametrize("write", [_atomic, _created], ids=["atomic_write", "create_private"])
@pytest.mark.parametrize("plant", ["symlink", "hardlink", "dangling"])
def test_a_link_at_the_path_is_replaced_never_written_through(tmp_path: Path, plant: str,
                                                               write: Callable[[Path, bytes], None]) -> None:
    soft, hard = victims(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    path = run / "1.1-implement-1.prompt.md"
    gone = tmp_path / "home" / "not-there"
    if plant == "symlink":
        path.symlink_to(soft)
    elif plant == "hardlink":
        os.link(hard, path)
    else:
        path.symlink_to(gone)
    write(path, b"the prompt\n")
    assert soft.read_bytes() == VICTIM and hard.read_bytes() == VICTIM and not gone.exists()
    seen = os.lstat(path)
    assert stat.S_ISREG(seen.st_mode) and seen.st_nlink == 1
    assert stat.S_IMODE(seen.st_mode) == 0o600
    assert path.read_bytes() == b"the prompt\n"
    assert sorted(p.name for p in run.iterdir()) == [path.name]  # no temporary file left behind


def test_a_folder_in_the_way_is_an_error_not_a_write(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.mkdir()
    for write in (_atomic, _created, lambda p, _: unlink_entry(p)):
        with pytest.raises(UnsafeFile, match="a folder is in the way"):
            write(path, b"{}")
    assert path.is_dir() and list(tmp_path.iterdir()) == [path]


def test_reading_an_agents_file_refuses_links_specials_and_excess(tmp_path: Path) -> None:
    soft, hard = victims(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / "plain").write_bytes(b'{"ok": true}')
    assert read_private(run / "plain", 100) == b'{"ok": true}'
    (run / "soft").symlink_to(soft)
    os.link(hard, run / "hard")
    os.mkfifo(run / "fifo")
    (run / "dir").mkdir()
    for name, words in (("soft", "is a symlink"), ("hard", "has another hard link"),
                        ("fifo", "not a regular file"), ("dir", "not a regular file")):
        with pytest.raises(UnsafeFile, match=words):
            read_private(run / name, 100)
    with pytest.raises(TooLarge, match="larger than 5 bytes"):
        read_private(run / "plain", 5)
    with pytest.raises(FileNotFoundError):
        read_private(run / "absent", 100)


def test_the_run_folder_is_made_private_and_a_link_there_refused(tmp_path: Path) -> None:
    made = private_dir(tmp_path / "harnery" / "workflow")
    assert stat.S_IMODE(os.stat(made).st_mode) == 0o700
    (tmp_path / "elsewhere").mkdir(mode=0o755)
    os.chmod(tmp_path / "elsewhere", 0o755)
    (tmp_path / "harnery" / "workflow" / "wf-1").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafeFile, match="is a symlink or no folder"):
        private_dir(tmp_path / "harnery" / "workflow" / "wf-1")
    assert stat.S_IMODE(os.stat(tmp_path / "elsewhere").st_mode) == 0o755  # not made ours through the link
