"""The persistent cache of compiled code: Python code objects and machine code, both run as they
are loaded, so the cache is held to the rules of a place code is run from.

- **It touches only its own files.** They live in a folder of its own, ``FOLDER``, inside the
  folder the user names (``SUBGRAPH_AD_CACHE``, else the user's cache folder); it never reads,
  counts or deletes anything outside that folder, never follows a link, never descends into a
  subfolder, and inside it deletes only regular files of the user's named as its entries
  (``<kind>-<64 hex digits>``) or its partial writes (``….part``).
- **It runs nothing another user could have written.** Both folders must be the user's own and
  writable by no one else (as pip checks its cache); otherwise a ``CacheWarning`` says so and
  code is compiled without the cache. The folder is made with mode 0700 and every file 0600.
  An entry is opened without following a link and without blocking (a FIFO cannot hang it),
  and read only when it is a regular file of the user's, private, of at most ``ENTRY_LIMIT``
  bytes.
- **An entry is used only when its HMAC-SHA256 checks**, keyed by ``key``: 32 random bytes made
  once per cache folder, readable by the user alone. The owner checks say who could have written
  a file; the key says this cache wrote it: an entry copied in from elsewhere (another user's
  cache, a backup, a shared image) is the user's file but not signed by this key, so it is
  compiled again rather than run. It also catches any damage, as the checksum did.
- **A write is whole or absent.** An entry is written to a new private temporary file in the
  same folder and renamed over its name; on any failure the temporary file is removed, and a
  store deletes the cache's own temporary files older than ``PART_AGE`` (left by a killed
  process).

Where the system has no file owners and ``O_NOFOLLOW`` (Windows), the cache is off.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import importlib.metadata
import os
import re
import secrets
import stat
import sys
import time
import warnings
from pathlib import Path
from typing import Iterator

#: Bumped when what an entry holds changes meaning; part of every entry's key and HMAC.
CACHE_FORMAT = b"subgraph_ad cache 2"
#: Programs below this many steps compile in milliseconds: not worth a file.
CACHE_MIN_STEPS = 1000
#: The cache's entries are pruned to 80% of this many bytes, oldest use first, when a store
#: takes them over.
LIMIT = 1 << 30
#: The largest entry stored or read, in bytes (the largest programs' code is tens of MB).
ENTRY_LIMIT = 1 << 28
#: Seconds after which a partial write of the cache's own is taken as left by a dead process.
PART_AGE = 3600.0
#: The cache's own folder, inside the one the user names.
FOLDER = "subgraph_ad-compiled"

_ENTRY = re.compile(r"[a-z]+-[0-9a-f]{64}")
_PART = re.compile(r"(?:[a-z]+-[0-9a-f]{64}|key)\.[0-9]+\.[0-9a-f]{16}\.part")
_KEY_SIZE = 32
_TAG = (b"Signature: 8a477f597d28d172789f06886806bc55\n"
        b"# Compiled code cached by subgraph_ad (https://bford.info/cachedir/).\n")
#: Everything the checks need: file owners, opening without following a link, and every file
#: operation relative to an open folder (so a folder checked is the folder used).
_SUPPORTED = (hasattr(os, "getuid") and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY")
              and {os.open, os.mkdir, os.rename, os.unlink, os.link} <= os.supports_dir_fd
              and {os.scandir, os.utime} <= os.supports_fd)


class CacheWarning(UserWarning):
    """The cache folder could hold code written by someone else (it is another user's, or others
    can write to it): compiled code is neither loaded from it nor stored in it."""


@functools.cache
def _version() -> str:
    try:
        return importlib.metadata.version("subgraph_ad")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that is not installed
        return "unknown"


def cache_key(*parts: str) -> str:
    """The key of an entry: a hash of what the stored code is compiled from (its generated
    text, the compiler's versions and target), this library's version and the cache format."""
    digest = hashlib.sha256(CACHE_FORMAT + f" subgraph_ad {_version()}".encode())
    for part in parts:
        digest.update(b"\0" + part.encode())
    return digest.hexdigest()


def cache_directory() -> Path | None:
    """The folder the user names for the cache, which keeps its files in ``FOLDER`` inside it:
    ``SUBGRAPH_AD_CACHE`` (a folder, or ``off``), else the user's cache folder
    (``~/.cache/subgraph_ad``, ``~/Library/Caches/subgraph_ad``). None when off."""
    chosen = os.environ.get("SUBGRAPH_AD_CACHE")
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "off", "0", "false", "no") else Path(chosen).expanduser()
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "subgraph_ad"


def cache_load(kind: str, key: str) -> bytes | None:
    """The data stored under ``key``, or None: missing, refused (not a private regular file of
    the user's, too big), or its HMAC does not check (damaged, another version's, not written
    by this cache). What is refused is compiled again and stored over it."""
    with _folder() as folder:
        if folder is None:
            return None
        secret = _read_own(folder, "key", _KEY_SIZE)
        name = f"{kind}-{key}"
        raw = _read_own(folder, name, ENTRY_LIMIT + 256, touch=True)
        if secret is None or len(secret) != _KEY_SIZE or raw is None:
            return None
        header, _, data = raw.partition(b"\n\n")
        if not hmac.compare_digest(header, _header(secret, name, data)):
            return None
        return data


def cache_store(kind: str, key: str, data: bytes) -> None:
    """Keep ``data`` under ``key``, then prune. A cache that cannot be written is no error:
    the code is compiled again next time."""
    if len(data) > ENTRY_LIMIT:
        return
    with _folder() as folder:
        if folder is None:
            return
        try:
            secret = _secret(folder)
            name = f"{kind}-{key}"
            _publish(folder, name, _header(secret, name, data) + b"\n\n" + data)
            _prune(folder, LIMIT)
        except OSError:
            pass


def _header(secret: bytes, name: str, data: bytes) -> bytes:
    mac = hmac.new(secret, CACHE_FORMAT + b"\0" + name.encode() + b"\0" + data, hashlib.sha256)
    return CACHE_FORMAT + b" " + name.encode() + b" " + mac.hexdigest().encode()


# -- the folder ------------------------------------------------------------------------------------
@contextlib.contextmanager
def _folder() -> Iterator[int | None]:
    """The cache's own folder, open (every access goes through this descriptor, so the folder
    checked is the folder used), or None: off, unsafe (warned) or not usable."""
    root = cache_directory()
    if root is None or not _SUPPORTED:
        yield None
        return
    folder = None
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # links in the user's own path are theirs
        try:
            if _safe(top, root):
                made = True
                try:
                    os.mkdir(FOLDER, 0o700, dir_fd=top)
                except FileExistsError:
                    made = False
                folder = os.open(FOLDER, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=top)
                if not _safe(folder, root / FOLDER):
                    os.close(folder)
                    folder = None
                elif made:
                    with contextlib.suppress(OSError):
                        _publish(folder, "CACHEDIR.TAG", _TAG)
        finally:
            os.close(top)
    except OSError:
        folder = None
    try:
        yield folder
    finally:
        if folder is not None:
            os.close(folder)


def _safe(fd: int, path: Path) -> bool:
    """Whether the open folder is the user's own and writable by no one else; warns if not."""
    info = os.fstat(fd)
    if info.st_uid != os.getuid():
        problem = f"owned by uid {info.st_uid}, not by you (uid {os.getuid()})"
    elif info.st_mode & 0o022:
        problem = f"writable by others (mode {stat.S_IMODE(info.st_mode):o})"
    else:
        return True
    warnings.warn(f"the compile cache folder {path} is {problem}, so another user could put code there: "
                  f"compiled code is not cached. Use a folder only you can write (chmod go-w), or set "
                  f"SUBGRAPH_AD_CACHE to one, or to 'off'", CacheWarning, stacklevel=2)
    return False


# -- files -----------------------------------------------------------------------------------------
def _read_own(folder: int, name: str, limit: int, touch: bool = False) -> bytes | None:
    """The content of ``name`` if it is a regular file of the user's, private, of at most
    ``limit`` bytes; else None. Opened without following a link and without blocking (a FIFO
    opens at once, and is refused), checked on the open file, read no further than its size.
    ``touch`` marks it used, for the prune."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077
                or info.st_size > limit):
            return None
        chunks, left = [], info.st_size + 1  # one byte more: a file that grew since is refused
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left != 1:
            return None
        if touch:
            os.utime(fd)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _secret(folder: int) -> bytes:
    """The key of this cache folder's HMACs, made on first use; OSError when it cannot be had."""
    secret = _read_own(folder, "key", _KEY_SIZE)
    if secret is None:
        part = _write_part(folder, "key", secrets.token_bytes(_KEY_SIZE))
        try:
            os.link(part, "key", src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
        except FileExistsError:  # another process made it first (or it is no file of ours)
            pass
        finally:
            os.unlink(part, dir_fd=folder)
        secret = _read_own(folder, "key", _KEY_SIZE)
    if secret is None or len(secret) != _KEY_SIZE:
        raise OSError(f"the cache key in {FOLDER} is not a private {_KEY_SIZE}-byte file of yours")
    return secret


def _publish(folder: int, name: str, data: bytes) -> None:
    """Write ``name`` whole, or leave it as it was: a new temporary file, renamed over it."""
    part = _write_part(folder, name, data)
    try:
        os.replace(part, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part, dir_fd=folder)
        raise


def _write_part(folder: int, name: str, data: bytes) -> str:
    """``data`` in a new private file named for ``name``, this process and a random token (so no
    two writers meet); its name. Removed again if the write fails for any reason."""
    part = f"{name}.{os.getpid()}.{secrets.token_hex(8)}.part"
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part, dir_fd=folder)
        raise
    return part


def _prune(folder: int, limit: int) -> None:
    """Delete the least recently used entries, down to 80% of ``limit`` when over it, and
    partial writes older than ``PART_AGE``: only regular files of the user's with the cache's
    own names, in its own folder (one level, no link followed)."""
    now, user = time.time(), os.getuid()
    entries = []
    with os.scandir(folder) as listing:
        for item in listing:
            entry, part = _ENTRY.fullmatch(item.name), _PART.fullmatch(item.name)
            if not (entry or part):
                continue
            with contextlib.suppress(OSError):
                info = item.stat(follow_symlinks=False)
                if not stat.S_ISREG(info.st_mode) or info.st_uid != user:
                    continue
                if entry:
                    entries.append((info.st_mtime, info.st_size, item.name))
                elif now - info.st_mtime > PART_AGE:
                    os.unlink(item.name, dir_fd=folder)
    total = sum(size for _, size, _ in entries)
    if total <= limit:
        return
    for _, size, name in sorted(entries):
        if total <= 0.8 * limit:
            break
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=folder)
            total -= size
