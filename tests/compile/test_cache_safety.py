"""The persistent cache of compiled code is safe to point anywhere: it only ever touches files it
wrote (in its own private folder, named by its own pattern), runs nothing another user could
have written (a folder not the user's own or writable by others is refused with a
``CacheWarning``; an entry must be a private regular file of the user's, of bounded size, with a
keyed HMAC), cannot be made to hang or to read without end (a FIFO, a link to /dev/zero), and
leaves no partial file behind. Real files in temporary folders; the tests run as root, so other
owners are made with ``os.chown``. Every refused entry is compiled again: the values are checked
against the recurrence run in NumPy, and the compiler is spied on to tell a load from a compile.

The attacks are written against what a cache entry on disk is (a header line, a blank line and
the data), not against this version's layout, so that each fails on a cache that lacks the check.
"""

import builtins
import hashlib
import marshal
import os
import stat
import subprocess
import sys
import textwrap
import time
import weakref
from pathlib import Path

import numpy as np
import pytest

import subgraph_ad as sad
import subgraph_ad.compile.program as program_module
from subgraph_ad.compile import cache as cache_module
from subgraph_ad.compile.backends import numba as numba_backend

LINKS = 600  # 1,200 steps: above the size from which compiled code is kept
POINTS = np.linspace(-2.0, 2.0, 101)
OTHER_UID = 54321  # no user of this machine: "someone else"
GIB = 1 << 30


def _chain():
    tape = sad.Tape()
    x = tape.var("x")
    z = x
    for k in range(LINKS):
        z = sad.sin(z) * 0.9 + (k + 1) / 1000
    return x, z


def _expected(points):
    z = np.array(points, dtype=float)
    for k in range(LINKS):
        z = np.sin(z) * 0.9 + (k + 1) / 1000
    return z


def _check(f, then=lambda z: z) -> None:
    """``f``, the chain followed by ``then``, is right on arrays (block code) and on one point
    (point code)."""
    assert np.allclose(f(POINTS), then(_expected(POINTS)), rtol=1e-12, atol=1e-12)
    assert f(0.3) == pytest.approx(float(then(_expected([0.3]))[0]), rel=1e-12, abs=1e-12)


def _compile_spy(monkeypatch, backend="numpy"):
    """Count the compiles of generated code: Python's (``compile``, shadowed in program's
    module) for the NumPy backend's code objects, LLVM's for the Numba backend's object code."""
    calls = []
    module, name = (program_module, "compile") if backend == "numpy" else (numba_backend, "_compile")
    real = getattr(module, name, getattr(builtins, name, None))

    def spy(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy, raising=False)
    return calls


def _entries(root: Path) -> list[Path]:
    """Every cache entry under ``root``, whatever the layout: regular files that start with the
    cache's header."""
    found = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            if stat.S_ISREG(path.lstat().st_mode):
                with path.open("rb") as stream:
                    if stream.read(17) == b"subgraph_ad cache":
                        found.append(path)
    return sorted(found)


def _files(root: Path) -> list[Path]:
    return sorted(Path(folder, name) for folder, _, names in os.walk(root) for name in names)


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """No Numba kernel kept alive in memory from an earlier test (each load goes to the disk)."""
    monkeypatch.setattr(numba_backend, "_LIVE", weakref.WeakValueDictionary())


@pytest.fixture
def root(tmp_path, monkeypatch):
    """``SUBGRAPH_AD_CACHE``: a private folder of this user's, holding the first entries."""
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("SUBGRAPH_AD_CACHE", str(folder))
    _check(sad.lambdify(*_chain()))
    assert len(_entries(folder)) == 2  # the block code and the point code
    return folder


# -- item 8: the prune deletes only what the cache wrote -----------------------------------------
def _sparse(path: Path, size: int, age_days: float) -> None:
    """A file of ``size`` bytes that takes no disk space, last used ``age_days`` ago."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as stream:
        stream.truncate(size)
    stamp = time.time() - age_days * 86400
    os.utime(path, (stamp, stamp))


def test_the_prune_deletes_nothing_it_did_not_write(tmp_path, monkeypatch):
    """The cache pointed at a working folder that holds 4.5 GiB of the user's files (old, in
    folders three levels down and behind a link to a folder outside): storing, which prunes,
    leaves every one of them as it was."""
    work = tmp_path / "work"
    outside = tmp_path / "outside"
    mine = {
        work / "thesis.tex": 2_000,
        work / "data.bin": 2 * GIB,
        work / "runs" / "a" / "out.h5": GIB,
        outside / "x" / "notes.txt": GIB,
        outside / "y" / "thesis-backup.tex": GIB // 2,
    }
    for k, (path, size) in enumerate(mine.items()):
        _sparse(path, size, age_days=400 - k)
    (work / "linked").symlink_to(outside, target_is_directory=True)
    monkeypatch.setenv("SUBGRAPH_AD_CACHE", str(work))
    _check(sad.lambdify(*_chain()))
    assert _entries(work), "the cache stored nothing"
    for path, size in mine.items():
        assert path.exists() and path.stat().st_size == size, f"{path} was deleted or changed"


def test_the_prune_keeps_its_own_entries_under_the_limit_by_last_use(root, monkeypatch):
    """Over the limit, the cache deletes its least recently used entries down to 80% of it,
    and nothing else in its folder or beside it (a user's file named like a temporary one, the
    key, the tag)."""
    folder = root / cache_module.FOLDER
    (root / "thesis.tex").write_text("\\begin{document}")
    (folder / "notes.part").write_text("mine")
    for path in _entries(root):
        path.unlink()
    keys = [hashlib.sha256(bytes([k])).hexdigest() for k in range(3)]
    data = [bytes([k]) * 1000 for k in range(3)]
    monkeypatch.setattr(cache_module, "LIMIT", 3000)  # two entries (1,000 bytes and a header each) fit
    for k in range(2):
        cache_module.cache_store("python", keys[k], data[k])
        os.utime(folder / f"python-{keys[k]}", (1e9 + k, 1e9 + k))  # 2001: long unused, the first the longest
    assert cache_module.cache_load("python", keys[0]) == data[0]  # now the first is the last used
    cache_module.cache_store("python", keys[2], data[2])
    assert [cache_module.cache_load("python", key) for key in keys] == [data[0], None, data[2]]
    for kept in (root / "thesis.tex", folder / "notes.part", folder / "key", folder / "CACHEDIR.TAG"):
        assert kept.exists()


def test_stale_partial_files_of_its_own_are_cleaned_and_fresh_ones_kept(root):
    folder = root / cache_module.FOLDER
    stale = folder / f"python-{'a' * 64}.123.{'0' * 16}.part"
    fresh = folder / f"numba-{'b' * 64}.124.{'1' * 16}.part"
    for path in (stale, fresh):
        path.write_bytes(b"half an entry")
        path.chmod(0o600)
    before = time.time() - cache_module.PART_AGE - 60
    os.utime(stale, (before, before))
    x, z = _chain()
    _check(sad.lambdify([x], z + 1.0), lambda z: z + 1.0)  # a store, which cleans
    assert not stale.exists() and fresh.exists()


# -- item 9: nothing another user wrote is run ---------------------------------------------------
def _forge(entry: Path, marker: Path) -> None:
    """Replace the code in ``entry`` by code that leaves ``marker`` when run, and fix the
    checksum (the header's last field) as anyone can who knows the format but no secret."""
    header, _, _ = entry.read_bytes().partition(b"\n\n")
    code = compile(f"open({str(marker)!r}, 'w').close()\ndef _f(*args):\n    return (42.0,)\n", "<planted>", "exec")
    data = marshal.dumps(code)
    entry.write_bytes(header.rsplit(b" ", 1)[0] + b" " + hashlib.sha256(data).hexdigest().encode() + b"\n\n" + data)


def test_a_forged_entry_is_refused_and_the_code_compiled_again(root, tmp_path, monkeypatch):
    marker = tmp_path / "planted-code-ran"
    for entry in _entries(root):
        _forge(entry, marker)
    compiled = _compile_spy(monkeypatch)
    _check(sad.lambdify(*_chain()))
    assert not marker.exists(), "the planted code ran"
    assert len(compiled) == 2  # both entries refused, both compiled again
    _check(sad.lambdify(*_chain()))  # and stored again, now loaded
    assert len(compiled) == 2 and not marker.exists()


def test_an_entry_keyed_by_another_secret_is_refused(root, monkeypatch):
    """Entries in the right format whose HMAC is by another key (as when another user's cache
    is copied over this one) are compiled again, not loaded."""
    (root / cache_module.FOLDER / "key").write_bytes(os.urandom(32))  # still a private file of ours
    compiled = _compile_spy(monkeypatch)
    _check(sad.lambdify(*_chain()))
    assert len(compiled) == 2


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_an_entry_of_another_owner_is_not_loaded(tmp_path, monkeypatch, backend):
    """A correct entry, but owned by another user (planted), is compiled again, not loaded."""
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("SUBGRAPH_AD_CACHE", str(folder))
    x, z = _chain()
    sad.lambdify([x], z, backend=backend)(POINTS)
    entries = _entries(folder)
    assert entries
    for entry in entries:
        os.chown(entry, OTHER_UID, OTHER_UID)
    monkeypatch.setattr(numba_backend, "_LIVE", weakref.WeakValueDictionary())
    compiled = _compile_spy(monkeypatch, backend)
    x, z = _chain()
    values = sad.lambdify([x], z, backend=backend)(POINTS)
    assert np.allclose(values, _expected(POINTS), rtol=1e-12, atol=1e-12)
    assert len(compiled) == 1


def _group_writable(root: Path) -> None:
    root.chmod(0o770)


def _world_writable(root: Path) -> None:
    root.chmod(0o1777)  # even with the sticky bit, as /tmp


def _another_owner(root: Path) -> None:
    os.chown(root, OTHER_UID, OTHER_UID)


def _own_folder_group_writable(root: Path) -> None:
    for folder, _, _ in os.walk(root):
        if Path(folder) != root:
            os.chmod(folder, 0o770)


@pytest.mark.parametrize("unsafe", [_group_writable, _world_writable, _another_owner, _own_folder_group_writable])
def test_a_folder_others_can_write_is_refused_with_a_warning(root, tmp_path, monkeypatch, unsafe):
    """Nothing is loaded from or stored in it; the code is compiled, with the right values."""
    marker = tmp_path / "planted-code-ran"
    for entry in _entries(root):
        _forge(entry, marker)  # what another user could have put there
    unsafe(root)
    before = {p: p.read_bytes() for p in _files(root)}
    compiled = _compile_spy(monkeypatch)
    with pytest.warns(cache_module.CacheWarning, match=str(root)):
        _check(sad.lambdify(*_chain()))
        x, z = _chain()
        _check(sad.lambdify([x], z - 1.0), lambda z: z - 1.0)
    assert not marker.exists() and len(compiled) == 4
    assert {p: p.read_bytes() for p in _files(root)} == before  # nothing written, nothing deleted


def test_the_cache_makes_its_folders_and_files_private(tmp_path, monkeypatch):
    """Under the common umask 022, every folder and file the cache makes is the user's alone."""
    root = tmp_path / "new" / "cache"  # made by the cache
    monkeypatch.setenv("SUBGRAPH_AD_CACHE", str(root))
    mask = os.umask(0o022)
    try:
        _check(sad.lambdify(*_chain()))
    finally:
        os.umask(mask)
    made = [root, *(Path(folder, name) for folder, names, files in os.walk(root) for name in names + files)]
    assert len(made) >= 3
    for path in made:
        assert path.stat().st_uid == os.getuid()
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, f"{path} is {oct(path.stat().st_mode)}"


# -- entries that hang or never end, and failed writes --------------------------------------------
_CHILD = textwrap.dedent("""
    import resource, signal, sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    import test_cache_safety as t
    limit, size = sys.argv[1], int(sys.argv[2])
    if limit == "memory":  # a read without end fails here instead of filling the machine
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    else:  # a full disk: writes past ``size`` bytes fail (EFBIG), as on a full disk (ENOSPC)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    f = t.sad.lambdify(*t._chain())
    print(float(np.max(np.abs(f(t.POINTS) - t._expected(t.POINTS)))), abs(f(0.3) - t._expected([0.3])[0]))
""")


def _run_child(tmp_path: Path, root: Path, limit: str, size: int) -> list[float]:
    """lambdify the chain in a fresh process under a resource limit; its errors. The timeout
    only keeps a hang from blocking the suite (a normal run takes seconds)."""
    script = tmp_path / "child.py"
    script.write_text(_CHILD.format(tests=str(Path(__file__).parent)))
    package = Path(sad.__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, str(script), limit, str(size)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "SUBGRAPH_AD_CACHE": str(root), "PYTHONPATH": str(package)})
    assert done.returncode == 0, done.stderr[-3000:]
    return [float(v) for v in done.stdout.split()]


def _fifo(entry: Path) -> None:
    entry.unlink()
    os.mkfifo(entry, 0o600)


def _dev_zero(entry: Path) -> None:
    entry.unlink()
    entry.symlink_to("/dev/zero")


def _huge(entry: Path) -> None:
    with entry.open("r+b") as stream:
        stream.truncate(8 * GIB)  # sparse: takes no disk


@pytest.mark.parametrize("plant", [_fifo, _dev_zero, _huge])
def test_an_entry_that_would_hang_or_never_end_is_refused(root, tmp_path, plant):
    """A FIFO (opening it waits for a writer forever), a link to /dev/zero (reads without end)
    and an 8 GiB file in place of the entries: the child, limited to 2 GiB of memory, compiles
    instead and gets the right values."""
    entries = _entries(root)
    for entry in entries:
        plant(entry)
    errors = _run_child(tmp_path, root, "memory", 2 * GIB)
    assert max(errors) < 1e-12


def test_a_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("SUBGRAPH_AD_CACHE", str(root))

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    _check(sad.lambdify(*_chain()))
    assert not [p for p in _files(root) if p.name.endswith(".part")]
    assert not _entries(root)


def test_a_write_cut_short_by_a_full_disk_leaves_no_partial_file(tmp_path):
    """A child whose files cannot grow past 4 KiB (the key and tag fit; an entry does not)."""
    root = tmp_path / "cache"
    errors = _run_child(tmp_path, root, "file size", 4096)
    assert max(errors) < 1e-12
    assert not [p for p in _files(root) if p.name.endswith(".part")]
    assert not _entries(root)
