"""Child side of the code sandbox: run one program and its tests in separate processes.

This file runs as a script (``python -S -s [-P] _sandbox_boot.py``, with an explicit minimal
environment), never imported by rolleval, and uses the standard library only. The job
arrives as JSON on stdin::

    {"isolate": true, "namespaces": <clone flags>, "workdir": "...", "result_fd": 5,
     "tests_fd": 6, "solution": "...",
     "limits": {"cpu_s": 10, "memory_mb": 1024, "processes": 32, "file_mb": 16, "tmp_mb": 64}}

Processes (``isolate``):

* **boot** (this process, started by rolleval): enters new mount, PID, network, IPC and UTS
  namespaces. Run as root, it keeps the host's user namespace (it is root there) and drops
  the supplementary groups; run as another user (or as a root that may not mount, which
  first becomes nobody), it also enters a new user namespace that maps that user to root. It forks the first process of the PID namespace and waits for it.
* **init** (PID 1): builds a new root filesystem, a small ``tmpfs`` holding only read-only
  bind mounts of ``/usr``, the Python installation, ``/etc/ld.so.cache``, a few ``/dev``
  nodes, then a fresh ``/proc`` and the candidate's private size-limited ``tmpfs`` on
  ``/tmp``; nothing of the host's ``/run``, ``/var``, ``/tmp``, ``/home``, ``/root``,
  ``/etc`` or sockets. It forks the candidate, then becomes the **harness**: nobody
  (65534) without capabilities, not dumpable (no ptrace, no ``/proc/<pid>/mem``), it reads
  the tests (``tests_fd``, opened only now) and runs them, writing the report to the result
  channel (``result_fd``). Every name the program defined is, in the harness, a plain data
  value or a proxy whose calls go to the candidate process. Its exit ends the namespace.
* **candidate**: first process of its own PID namespace (it cannot signal the harness),
  working in ``/tmp``; run as nobody (65534) in a user namespace of its own (so its process
  limit counts its own processes), no capabilities, ``no_new_privs``, resource limits. It
  holds neither the tests nor the result channel: it runs the program, then answers the
  harness's requests.

Requests and answers are length-prefixed JSON. Values cross as data only: ``None``,
``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes``, ``bytearray``, lists, tuples,
dicts, sets, frozensets, ``Counter``, ``OrderedDict``, ``defaultdict``, ``deque``,
``Decimal``, ``Fraction`` and ``range``, rebuilt by the receiver as those exact types (a
subclass crosses as its base type, so its methods stay behind). Any other object stays in
the candidate process and is a proxy in the harness: it can be called, its attributes,
items, length, truth value, ``str`` and iteration asked for (each answer data or another
proxy); it equals only itself, and has no arithmetic or ordering, so no value the test
compares against ever reaches the program's code. Exceptions cross by type name and
message.

The outcome goes to ``result_fd``, one JSON object a line: ``{"ready": true}`` from init,
the harness's report ``{"stage": "tests", "tests_run": 3, "tests_passed": 2, "failure":
"assertion", "message": "AssertionError: ..."}`` (``failure`` ``null``, ``syntax``,
``assertion`` or ``crash``; ``"candidate_ended": true`` when the candidate process ended
before answering), then, in that case, ``{"candidate_status": N}``. A setup failure writes
``{"sandbox_error": "..."}``. Without ``isolate`` (``--unsafe-exec``) the same processes
run without namespaces, as the current user, in ``workdir``.
"""

from __future__ import annotations

import builtins
import ctypes
import json
import os
import resource
import signal
import struct
import sys

# typing is not imported when this runs (every import is paid at each start): the names
# below exist for the type checker only, and the annotations are never evaluated
TYPE_CHECKING = False
if TYPE_CHECKING:
    import ast
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any, NoReturn, TextIO, TypedDict, TypeVar

    _T = TypeVar("_T")

    class _Limits(TypedDict):
        cpu_s: int
        memory_mb: int
        processes: int
        file_mb: int
        tmp_mb: int

    class _Job(TypedDict):
        """The job on stdin (see the module notes), and whether the boot process was the
        host's root (``host_root``, set here)."""

        isolate: bool
        namespaces: int
        workdir: str
        result_fd: int
        tests_fd: int
        solution: str
        limits: _Limits
        host_root: bool


_NOBODY = 65534
_CLONE_NEWNS, _CLONE_NEWUSER, _CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
_MS_MOVE, _MS_BIND, _MS_REC, _MS_PRIVATE = 0x2000, 0x1000, 0x4000, 0x40000
_AT_FDCWD, _AT_RECURSIVE = -100, 0x8000
_MOUNT_ATTR_RDONLY, _MOUNT_ATTR_NOSUID = 0x1, 0x2
_SYS_MOUNT_SETATTR = 442  # the same number on every Linux architecture (5.12+)
_PR_SET_DUMPABLE, _PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS = 4, 24, 38
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAP_VERSION_3 = 0x20080522
_DEVICES = ("null", "zero", "full", "random", "urandom")
#: Largest message either side accepts (a bigger return value is a crash).
_MESSAGE_LIMIT = 32 << 20
_STAGE = "/tmp"  # where the new root is built (inside the new mount namespace only)


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


_LIBC = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _unshare(flags: int, what: str) -> None:
    _check(_LIBC.unshare(ctypes.c_int(flags)), f"unshare({what})")


def _mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None
) -> None:
    _check(
        _LIBC.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {source or fstype} on {target}",
    )


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def _result_line(out: TextIO, record: dict[str, Any]) -> None:
    """One JSON line of the result channel, written through at once."""
    out.write(json.dumps(record) + "\n")
    out.flush()


def _describe(exc: BaseException) -> str:
    message = " ".join(str(exc).split())[:500]
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


# --------------------------------------------------------------------------- namespaces


def _enter_namespaces(flags: int) -> bool:
    """Boot process: new namespaces. As root: the host's user namespace, no supplementary
    group (True: the harness and candidate then become nobody). Otherwise, or as a root
    that may not mount (a container without ``CAP_SYS_ADMIN``: it first becomes nobody),
    also a new user namespace mapping this user to root (False)."""
    if os.geteuid() == 0:
        os.setgroups([])
        if _LIBC.unshare(ctypes.c_int(flags)) == 0:
            return True
        if ctypes.get_errno() != 1:  # EPERM
            _check(-1, "unshare(mount, pid, net, ipc, uts)")
        os.setresgid(_NOBODY, _NOBODY, _NOBODY)
        os.setresuid(_NOBODY, _NOBODY, _NOBODY)
        _LIBC.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # own /proc/self files, to write the maps
    uid, gid = os.geteuid(), os.getegid()
    _unshare(flags | _CLONE_NEWUSER, "user, mount, pid, net, ipc, uts")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"0 {uid} 1")
    _write("/proc/self/gid_map", f"0 {gid} 1")
    return False


def _python_trees() -> list[str]:
    """The folders of the Python installation that are not under ``/usr``."""
    paths = {
        os.path.realpath(sys.base_prefix),
        os.path.realpath(sys.base_exec_prefix),
        os.path.dirname(os.path.realpath(sys.executable)),
    }
    keep: list[str] = []
    for path in sorted(paths):
        if path == "/usr" or path.startswith("/usr/") or path == "/":
            continue
        if not any(path.startswith(k + "/") for k in keep):
            keep.append(path)
    return keep


def _bind(source: str, relative: str, *, directory: bool = True) -> None:
    target = _STAGE + relative
    if directory:
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "w").close()
    _mount(source, target, None, _MS_BIND | _MS_REC)


def _build_root(limits: _Limits) -> None:
    """Init process: a new root holding only what the interpreter needs, read-only, and
    the candidate's private size-limited /tmp."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    _mount("tmpfs", _STAGE, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=1m,mode=0755")
    _bind("/usr", "/usr")
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        host = "/" + name
        if os.path.islink(host):
            os.symlink(os.readlink(host), _STAGE + host)
        elif os.path.isdir(host):
            _bind(host, host)
    for tree in _python_trees():
        _bind(tree, tree)
    if os.path.isfile("/etc/ld.so.cache"):
        _bind("/etc/ld.so.cache", "/etc/ld.so.cache", directory=False)
    for name in _DEVICES:
        if os.path.exists("/dev/" + name):
            _bind("/dev/" + name, "/dev/" + name, directory=False)
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        os.symlink(target, f"{_STAGE}/dev/{name}")
    for name in ("proc", "tmp"):
        os.makedirs(f"{_STAGE}/{name}", exist_ok=True)
    os.chdir(_STAGE)
    _mount(_STAGE, "/", None, _MS_MOVE)
    os.chroot(".")
    os.chdir("/")
    attr = _MountAttr(attr_set=_MOUNT_ATTR_RDONLY | _MOUNT_ATTR_NOSUID)
    _check(
        _LIBC.syscall(
            _SYS_MOUNT_SETATTR,
            _AT_FDCWD,
            b"/",
            _AT_RECURSIVE,
            ctypes.byref(attr),
            ctypes.sizeof(attr),
        ),
        "mount_setattr(/, read-only, recursive)",
    )
    # after the read-only pass: the candidate writes its user namespace's maps in /proc
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    size = int(limits["tmp_mb"])
    _mount("tmpfs", "/tmp", "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={size}m,mode=1777")


def _drop_capabilities() -> None:
    """No capabilities now or after any exec; no privilege gain through setuid files."""
    for cap in range(64):
        _LIBC.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the last capability
    _LIBC.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(version=_CAP_VERSION_3, pid=0)
    data = (_CapData * 2)()
    _check(_LIBC.capset(ctypes.byref(header), data), "capset(none)")
    _check(_LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(no_new_privs)")


def _become_nobody() -> None:
    """As the host's root: the host's nobody, with no group and no capability."""
    for cap in range(64):
        _LIBC.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    os.setgroups([])
    os.setresgid(_NOBODY, _NOBODY, _NOBODY)
    os.setresuid(_NOBODY, _NOBODY, _NOBODY)


def _own_user_namespace() -> None:
    """The candidate as nobody: a user namespace of its own (nobody mapped to itself), so
    RLIMIT_NPROC counts its processes only. Best effort: where unprivileged user namespaces
    are refused, nobody's processes machine-wide share the count."""
    _LIBC.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # own /proc/self files, to write the maps
    if _LIBC.unshare(ctypes.c_int(_CLONE_NEWUSER)) != 0:
        return
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{_NOBODY} {_NOBODY} 1")
    _write("/proc/self/gid_map", f"{_NOBODY} {_NOBODY} 1")


def _set_limits(limits: _Limits, processes: bool = True) -> None:
    cpu = int(limits["cpu_s"])
    memory = int(limits["memory_mb"]) << 20
    files = int(limits["file_mb"]) << 20
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    if processes:
        resource.setrlimit(resource.RLIMIT_NPROC, (int(limits["processes"]),) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (files, files))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


# --------------------------------------------------------------------------- data encoding

_FACTORIES = {t.__name__: t for t in (int, float, str, list, tuple, dict, set, frozenset)}


class _ProtocolError(Exception):
    """A message that is not what the protocol allows."""


def _encode(value: object, other: Callable[[object], Any], depth: int = 0) -> Any:
    """``value`` as JSON-ready data (see the module notes); ``other(value)`` for anything
    that is not data."""
    if depth > 200:
        raise ValueError("value nested too deeply")
    if value is None or value is True or value is False:
        return value
    d = depth + 1
    if isinstance(value, int) and not isinstance(value, bool):
        return int.__index__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, complex):
        return {"c": [value.real, value.imag]}
    if isinstance(value, bytes):
        return {"b": bytes.hex(value)}
    if isinstance(value, bytearray):
        return {"ba": bytearray.hex(value)}
    collections = sys.modules.get("collections")  # its types exist only once it is imported
    if collections is not None and isinstance(
        value, (collections.Counter, collections.OrderedDict)
    ):
        tag = "ctr" if isinstance(value, collections.Counter) else "od"
        return {tag: [[_encode(k, other, d), _encode(v, other, d)] for k, v in dict.items(value)]}
    if collections is not None and isinstance(value, collections.defaultdict):
        factory = value.default_factory
        name = factory.__name__ if factory in _FACTORIES.values() else None
        pairs = [[_encode(k, other, d), _encode(v, other, d)] for k, v in dict.items(value)]
        return {"dd": [name, pairs]}
    if isinstance(value, dict):
        return {"d": [[_encode(k, other, d), _encode(v, other, d)] for k, v in dict.items(value)]}
    if isinstance(value, list):
        return {"l": [_encode(v, other, d) for v in list.__iter__(value)]}
    if isinstance(value, tuple):
        return {"t": [_encode(v, other, d) for v in tuple.__iter__(value)]}
    if isinstance(value, set):
        return {"s": [_encode(v, other, d) for v in set.__iter__(value)]}
    if isinstance(value, frozenset):
        return {"fs": [_encode(v, other, d) for v in frozenset.__iter__(value)]}
    if collections is not None and isinstance(value, collections.deque):
        return {"dq": [[_encode(v, other, d) for v in value], value.maxlen]}
    # decimal and fractions are imported only where the program imported them
    decimal, fractions = sys.modules.get("decimal"), sys.modules.get("fractions")
    if decimal is not None and isinstance(value, decimal.Decimal):
        return {"dec": decimal.Decimal.__str__(value)}
    if fractions is not None and isinstance(value, fractions.Fraction):
        return {"fr": [int(value.numerator), int(value.denominator)]}
    if isinstance(value, range):
        return {"r": [value.start, value.stop, value.step]}
    return other(value)


def _need(value: object, kind: type[_T]) -> _T:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _ProtocolError(f"expected {kind.__name__}, got {type(value).__name__}")
    return value


def _decode(data: Any, ref: Callable[[dict[str, Any]], object], depth: int = 0) -> Any:
    """Inverse of :func:`_encode`: only the data types, built fresh; ``ref(data)`` for a
    ``{"ref": ...}``."""
    if depth > 200:
        raise _ProtocolError("value nested too deeply")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if not isinstance(data, dict) or (len(data) != 1 and "ref" not in data):
        raise _ProtocolError(f"not an encoded value: {type(data).__name__}")
    d = depth + 1
    (tag,) = data if "ref" not in data else ("ref",)
    if tag in ("ctr", "od", "dd", "dq"):
        import collections
    body = data[tag]

    def items() -> list[Any]:
        return [_decode(v, ref, d) for v in _need(body, list)]

    def pairs(raw: object) -> list[tuple[Any, Any]]:
        return [(_decode(k, ref, d), _decode(v, ref, d)) for k, v in _need(raw, list)]

    if tag == "l":
        return items()
    if tag == "t":
        return tuple(items())
    if tag == "s":
        return set(items())
    if tag == "fs":
        return frozenset(items())
    if tag == "d":
        return dict(pairs(body))
    if tag == "ctr":
        return collections.Counter(dict(pairs(body)))
    if tag == "od":
        return collections.OrderedDict(pairs(body))
    if tag == "dd":
        name, raw = _need(body, list)
        factory = _FACTORIES[_need(name, str)] if name is not None else None
        return collections.defaultdict(factory, pairs(raw))
    if tag == "dq":
        raw, maxlen = _need(body, list)
        return collections.deque(
            [_decode(v, ref, d) for v in _need(raw, list)],
            None if maxlen is None else _need(maxlen, int),
        )
    if tag == "c":
        real, imag = _need(body, list)
        return complex(_need(real, float), _need(imag, float))
    if tag == "b":
        return bytes.fromhex(_need(body, str))
    if tag == "ba":
        return bytearray.fromhex(_need(body, str))
    if tag == "dec":
        import decimal

        return decimal.Decimal(_need(body, str))
    if tag == "fr":
        import fractions

        num, den = _need(body, list)
        return fractions.Fraction(_need(num, int), _need(den, int))
    if tag == "r":
        start, stop, step = _need(body, list)
        return range(_need(start, int), _need(stop, int), _need(step, int))
    if tag == "ref":
        return ref(data)
    raise _ProtocolError(f"unknown value tag {tag!r}")


class _Pipe:
    """One end of the harness-candidate channel: a pipe to read, a pipe to write."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd, self.write_fd = read_fd, write_fd

    def fds(self) -> tuple[int, int]:
        return (self.read_fd, self.write_fd)

    def close(self) -> None:
        for fd in self.fds():
            try:  # noqa: SIM105 (no contextlib: every import is paid at each start)
                os.close(fd)
            except OSError:
                pass


def _send(pipe: _Pipe, message: object) -> None:
    data = json.dumps(message, separators=(",", ":")).encode("utf-8")
    if len(data) > _MESSAGE_LIMIT:
        raise ValueError(f"value too large to return ({len(data)} bytes encoded)")
    view = memoryview(struct.pack(">I", len(data)) + data)
    while view:
        view = view[os.write(pipe.write_fd, view) :]


def _recv_exact(pipe: _Pipe, size: int) -> bytes:
    chunks: list[bytes] = []
    got = 0
    while got < size:
        chunk = os.read(pipe.read_fd, min(size - got, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _recv(pipe: _Pipe) -> Any:
    (size,) = struct.unpack(">I", _recv_exact(pipe, 4))
    if size > _MESSAGE_LIMIT:
        raise _ProtocolError(f"message of {size} bytes")
    return json.loads(_recv_exact(pipe, size))


def _channel_ends() -> tuple[_Pipe, _Pipe]:
    """(harness end, candidate end) of two fresh pipes."""
    to_candidate_r, to_candidate_w = os.pipe()
    to_harness_r, to_harness_w = os.pipe()
    return _Pipe(to_harness_r, to_candidate_w), _Pipe(to_candidate_r, to_harness_w)


# --------------------------------------------------------------------------- candidate side


class _Served:
    """The candidate's objects the harness holds proxies for (handle -> object)."""

    def __init__(self) -> None:
        self.objects: dict[int, Any] = {}
        self.handles: dict[int, int] = {}

    def ref(self, value: object) -> dict[str, Any]:
        key = id(value)
        handle = self.handles.get(key)
        if handle is None:
            handle = len(self.objects) + 1
            self.objects[handle] = value
            self.handles[key] = handle
        return {"ref": handle, "type": type(value).__name__, "call": callable(value)}

    def lookup(self, data: dict[str, Any]) -> Any:
        handle = data.get("ref")
        if not isinstance(handle, int) or handle not in self.objects:
            raise _ProtocolError(f"unknown object {handle!r}")
        return self.objects[handle]

    def encode(self, value: object) -> Any:
        try:
            return _encode(value, self.ref)
        except RecursionError:
            return self.ref(value)
        except ValueError:
            return self.ref(value)

    def answer(self, request: dict[str, Any]) -> Any:
        op = request["op"]
        target = self.objects[request["h"]]
        if op == "call":
            args = _decode(request["args"], self.lookup)
            kwargs = _decode(request["kwargs"], self.lookup)
            return target(*args, **kwargs)
        if op == "getattr":
            return getattr(target, request["name"])
        if op == "setattr":
            setattr(target, str(request["name"]), _decode(request["value"], self.lookup))
            return None
        if op == "getitem":
            return target[_decode(request["key"], self.lookup)]
        if op == "setitem":
            target[_decode(request["key"], self.lookup)] = _decode(request["value"], self.lookup)
            return None
        if op == "iter":
            return iter(target)
        if op == "next":
            return next(target)
        if op == "len":
            return len(target)
        if op == "bool":
            return bool(target)
        if op == "str":
            return str(target)
        if op == "repr":
            return repr(target)
        raise _ProtocolError(f"unknown request {op!r}")


def _globals_message(namespace: dict[str, Any], served: _Served) -> dict[str, Any]:
    names: dict[str, Any] = {}
    for name, value in list(namespace.items()):
        if name.startswith("__"):
            continue
        if isinstance(value, type(sys)):
            names[name] = {"mod": getattr(value, "__name__", name), **served.ref(value)}
        else:
            names[name] = served.encode(value)
    return {"names": names}


def _serve(sock: _Pipe, solution: str) -> None:
    """Candidate process: run the program, send its names, then answer requests."""
    sys.set_int_max_str_digits(0) if hasattr(sys, "set_int_max_str_digits") else None
    try:
        code = compile(solution, "solution.py", "exec")
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes in the source
        _send(sock, {"syntax": _describe(exc)})
        return
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    try:
        exec(code, namespace)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt included
        _send(sock, {"crash": _describe(exc)})
        return
    served = _Served()
    _send(sock, _globals_message(namespace, served))
    while True:
        try:
            request = _recv(sock)
        except EOFError:
            return
        try:
            reply = {"ok": served.encode(served.answer(request))}
        except BaseException as exc:  # the program's exceptions cross by name and message
            reply = {"err": [type(exc).__name__, _describe(exc)]}
        try:
            _send(sock, reply)
        except ValueError as exc:
            _send(sock, {"err": ["ValueError", _describe(exc)]})


# --------------------------------------------------------------------------- harness side


class _CandidateEnded(BaseException):
    """The candidate process ended (or closed its channel) before answering."""


_NAMED_ERRORS: dict[str, type[Exception]] = {}


def _exception(name: str, message: str) -> BaseException:
    """An exception of the builtin type ``name`` (by name only), else a plain ``Exception``
    subclass of that name; ``message`` is its ``_describe`` text."""
    prefix = f"{name}: "
    text = message[len(prefix) :] if message.startswith(prefix) else ""
    cls = getattr(builtins, name, None) if name.isidentifier() else None
    if isinstance(cls, type) and issubclass(cls, BaseException):
        try:
            return cls(text) if text else cls()
        except Exception:
            pass
    if name not in _NAMED_ERRORS:
        _NAMED_ERRORS[name] = type(
            name if name.isidentifier() else "ProgramError", (Exception,), {}
        )
    return _NAMED_ERRORS[name](text)


class _Channel:
    def __init__(self, sock: _Pipe) -> None:
        self.sock = sock
        self.proxies: dict[int, _Remote] = {}

    def proxy(self, data: dict[str, Any]) -> _Remote:
        handle = data.get("ref")
        if not isinstance(handle, int):
            raise _ProtocolError(f"bad object handle {handle!r}")
        found = self.proxies.get(handle)
        if found is None:
            found = _Remote(self, handle, str(data.get("type", "object")), data.get("call") is True)
            self.proxies[handle] = found
        return found

    def receive(self) -> Any:
        try:
            return _recv(self.sock)
        except (EOFError, OSError) as exc:
            raise _CandidateEnded() from exc

    def request(self, op: str, handle: int, **fields: object) -> Any:
        message: dict[str, Any] = {"op": op, "h": handle}
        for key, value in fields.items():
            message[key] = _encode(value, _argument) if key != "name" else value
        try:
            _send(self.sock, message)
        except OSError as exc:
            raise _CandidateEnded() from exc
        reply = self.receive()
        if not isinstance(reply, dict):
            raise _ProtocolError("reply is not an object")
        if "ok" in reply:
            return _decode(reply["ok"], self.proxy)
        err = reply.get("err")
        if isinstance(err, list) and len(err) == 2 and all(isinstance(x, str) for x in err):
            raise _exception(err[0], err[1])
        raise _ProtocolError("reply has neither a value nor an error")


def _argument(value: object) -> dict[str, Any]:
    """Harness to candidate: a proxy goes back as its handle; nothing else but data."""
    if isinstance(value, _Remote):
        return {"ref": object.__getattribute__(value, "_handle")}
    raise TypeError(f"a {type(value).__name__} cannot be passed to the program's code")


def _typed(value: object, kind: type[_T], what: str) -> _T:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"{what} returned {type(value).__name__}, not {kind.__name__}")
    return value


class _Remote:
    """The harness's view of an object that stays in the candidate process."""

    __slots__ = ("__weakref__", "_callable", "_channel", "_handle", "_type")

    def __init__(self, channel: _Channel, handle: int, type_name: str, is_callable: bool) -> None:
        object.__setattr__(self, "_channel", channel)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_type", type_name)
        object.__setattr__(self, "_callable", is_callable)

    def _ask(self, op: str, **fields: object) -> Any:
        return self._channel.request(op, self._handle, **fields)

    def __call__(self, *args: object, **kwargs: object) -> Any:
        return self._ask("call", args=list(args), kwargs=dict(kwargs))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._ask("getattr", name=name)

    def __setattr__(self, name: str, value: object) -> None:
        self._ask("setattr", name=name, value=value)

    def __getitem__(self, key: object) -> Any:
        return self._ask("getitem", key=key)

    def __setitem__(self, key: object, value: object) -> None:
        self._ask("setitem", key=key, value=value)

    def __iter__(self) -> Any:
        return self._ask("iter")

    def __next__(self) -> Any:
        return self._ask("next")

    def __len__(self) -> int:
        return _typed(self._ask("len"), int, "__len__")

    def __bool__(self) -> bool:
        return _typed(self._ask("bool"), bool, "__bool__")

    def __str__(self) -> str:
        return _typed(self._ask("str"), str, "__str__")

    def __repr__(self) -> str:
        try:
            return _typed(self._ask("repr"), str, "__repr__")
        except BaseException:
            return f"<{self._type} object of the program>"


def _literal_calls_only(name: str, trees: list[ast.Module]) -> bool:
    """True when ``name`` appears in the tests only as ``name(<literals>)`` or as a value
    passed to a call: a program's definition of a reserved name (a builtin, a standard
    module) then sees nothing the tests compute from the program's other answers."""
    import ast

    for tree in trees:
        allowed: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                if isinstance(node.func, ast.Name) and node.func.id == name:
                    args = [*node.args, *(k.value for k in node.keywords)]
                    for arg in args:
                        try:
                            ast.literal_eval(arg)
                        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                            return False
                    allowed.add(id(node.func))
                allowed.update(id(a) for a in node.args if isinstance(a, ast.Name))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Name)
                and node.id == name
                and id(node) not in allowed
                and isinstance(node.ctx, ast.Load)
            ):
                return False
    return True


def _standard_module(name: str) -> ModuleType | None:
    if name.split(".")[0] not in sys.stdlib_module_names:
        return None
    try:
        return __import__(name, fromlist=["_"])
    except Exception:
        return None


def _program_names(message: dict[str, Any], channel: _Channel, tests: list[str]) -> dict[str, Any]:
    """The harness's bindings for the program's names: data as data, modules as the
    standard module of that name, others as proxies. A name the tests would otherwise get
    from builtins or the standard library is the program's only where the tests call it
    with literal arguments (:func:`_literal_calls_only`)."""
    names: dict[str, Any] = {}
    text = "\n".join(tests)
    for name, data in _need(message.get("names"), dict).items():
        if not isinstance(name, str) or name.startswith("__") or name not in text:
            continue  # a name the tests never mention (a module the program imported...)
        module = data.get("mod") if isinstance(data, dict) else None
        reserved = hasattr(builtins, name) or name in sys.stdlib_module_names
        if isinstance(module, str):
            found = _standard_module(module)
            if found is not None:
                names[name] = found
                continue
        if reserved and not _literal_calls_only(name, _parse_tests(tests)):
            if name in sys.stdlib_module_names and _standard_module(name) is not None:
                names[name] = _standard_module(name)
            continue
        names[name] = _decode(data, channel.proxy)
    return names


def _parse_tests(tests: list[str]) -> list[ast.Module]:
    import ast

    trees: list[ast.Module] = []
    for test in tests:
        try:  # noqa: SIM105
            trees.append(ast.parse(test))
        except (SyntaxError, ValueError):  # reported when the snippet runs
            pass
    return trees


def _run_tests(channel: _Channel, tests: list[str]) -> dict[str, Any]:
    outcome: dict[str, Any] = {
        "stage": "compile",
        "tests_run": 0,
        "tests_passed": 0,
        "failure": None,
    }
    try:
        loaded = channel.receive()
        if not isinstance(loaded, dict):
            raise _ProtocolError("not an object")
        if "syntax" in loaded:
            outcome.update(failure="syntax", message=str(loaded["syntax"])[:600])
            return outcome
        outcome["stage"] = "solution"
        if "crash" in loaded:
            outcome.update(failure="crash", message=str(loaded["crash"])[:600])
            return outcome
        names = _program_names(loaded, channel, tests)
    except _CandidateEnded:
        outcome["stage"] = "solution"
        outcome.update(failure="crash", candidate_ended=True)
        return outcome
    except (_ProtocolError, ValueError, KeyError, TypeError) as exc:
        outcome.update(failure="crash", message=f"the program broke the protocol: {exc}"[:600])
        return outcome
    namespace = {"__name__": "__main__", "__builtins__": builtins, **names}
    outcome["stage"] = "tests"
    for number, test in enumerate(tests):
        outcome["tests_run"] = number + 1
        try:
            exec(compile(test, f"test_{number}.py", "exec"), namespace)
        except AssertionError as exc:
            outcome.update(failure="assertion", message=_describe(exc), failed_test=number)
            return outcome
        except _CandidateEnded:
            outcome.update(failure="crash", candidate_ended=True, failed_test=number)
            return outcome
        except BaseException as exc:
            outcome.update(failure="crash", message=_describe(exc), failed_test=number)
            return outcome
        outcome["tests_passed"] = number + 1
    return outcome


# --------------------------------------------------------------------------- processes


def _redirect(fd: int, path: str, flags: int) -> None:
    new = os.open(path, flags)
    os.dup2(new, fd)
    os.close(new)


def _harness(job: _Job, sock: _Pipe, out: TextIO) -> dict[str, Any] | None:
    """The harness's part (init once the candidate is started): drop privileges, run the
    tests, write the report; the report, or None when a setup failure was written."""
    if job["isolate"]:
        if job["host_root"]:
            _become_nobody()
        _drop_capabilities()
    _LIBC.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    _set_limits(job["limits"], processes=False)
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)
    _redirect(0, os.devnull, os.O_RDONLY)
    _redirect(1, os.devnull, os.O_WRONLY)
    with os.fdopen(int(job["tests_fd"]), "rb") as fh:
        tests = json.loads(fh.read())
    channel = _Channel(sock)
    try:
        setup = channel.receive()
    except _CandidateEnded:
        setup = {"setup": "the candidate process ended while it was being set up"}
    if not isinstance(setup, dict) or setup.get("setup", "") is not None:
        problem = setup.get("setup") if isinstance(setup, dict) else None
        _result_line(out, {"sandbox_error": str(problem or "bad setup message")})
        return None
    outcome = _run_tests(channel, [str(t) for t in tests])
    _result_line(out, outcome)
    return outcome


def _confine_candidate(job: _Job) -> None:
    """The candidate as nobody in a user namespace of its own, no capabilities, limits,
    in its private /tmp."""
    workdir = job["workdir"]
    if job["isolate"]:
        workdir = "/tmp"
        if job["host_root"]:
            _become_nobody()
            _own_user_namespace()
        _drop_capabilities()
    os.chdir(workdir)
    _set_limits(job["limits"])


def _candidate(job: _Job, sock: _Pipe) -> NoReturn:
    """Candidate process body (never returns)."""
    code = 0
    try:
        _redirect(0, os.devnull, os.O_RDONLY)
        low, high = sorted(sock.fds())
        os.closerange(3, low)
        os.closerange(low + 1, high)
        os.closerange(high + 1, 1 << 16)
        try:
            _confine_candidate(job)
        except BaseException as exc:
            _send(sock, {"setup": _describe(exc)})
            os._exit(3)
        # Sent before any of the program's code runs, so the program cannot forge it (a
        # setup failure is the sandbox's, never the program's).
        _send(sock, {"setup": None})
        _serve(sock, job["solution"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
    os._exit(code)


def _status(status: int) -> int:
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    return 128 + os.WTERMSIG(status)


def _candidate_status(pid: int, cpu_s: int) -> int | None:
    """Wait for the candidate; its status, a CPU-limit kill shown as SIGXCPU (as its PID
    namespace's first process, the kernel drops the soft limit's SIGXCPU and kills it with
    SIGKILL at the hard limit)."""
    while True:
        try:
            done, status, usage = os.wait4(pid, 0)
        except ChildProcessError:
            return None
        if done == pid:
            spent = usage.ru_utime + usage.ru_stime
            if os.WIFSIGNALED(status) and spent >= cpu_s:
                return 128 + signal.SIGXCPU
            return _status(status)


def _init(job: _Job, out: TextIO) -> NoReturn:
    """First process of the PID namespace (never returns): the root filesystem, the
    candidate, then the harness's part here; its exit ends everything else."""
    try:
        if job["isolate"]:
            _build_root(job["limits"])
        harness_end, candidate_end = _channel_ends()
        if job["isolate"]:
            _unshare(_CLONE_NEWPID, "pid")
        _result_line(out, {"ready": True})
    except BaseException as exc:
        _result_line(out, {"sandbox_error": _describe(exc)})
        os._exit(3)
    sys.stdout.flush()
    sys.stderr.flush()
    candidate = os.fork()
    if candidate == 0:
        _candidate(job, candidate_end)
    candidate_end.close()
    code = 0
    try:
        outcome = _harness(job, harness_end, out)
        if outcome is not None and outcome.get("candidate_ended"):
            status = _candidate_status(candidate, int(job["limits"]["cpu_s"]))
            _result_line(out, {"candidate_status": status})
    except BaseException as exc:
        try:
            _result_line(out, {"harness_error": _describe(exc)})
        finally:
            code = 70
    os._exit(code)


def main() -> NoReturn:
    job: _Job = json.loads(sys.stdin.buffer.read())
    job["host_root"] = False  # inside a new user namespace everyone is root
    out = os.fdopen(int(job["result_fd"]), "w", encoding="utf-8")
    try:
        if job["isolate"]:
            job["host_root"] = _enter_namespaces(int(job["namespaces"]))
    except BaseException as exc:
        _result_line(out, {"sandbox_error": _describe(exc)})
        os._exit(3)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _init(job, out)
    out.close()
    os.close(int(job["tests_fd"]))
    while True:
        try:
            done, status, usage = os.wait4(pid, 0)
        except ChildProcessError:
            os._exit(71)
        if done == pid:  # init is its namespace's first process too (see _candidate_status)
            spent = usage.ru_utime + usage.ru_stime
            if os.WIFSIGNALED(status) and spent >= int(job["limits"]["cpu_s"]):
                os._exit(128 + signal.SIGXCPU)
            os._exit(_status(status))


if __name__ == "__main__":
    main()
