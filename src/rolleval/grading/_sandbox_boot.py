"""Child side of the code sandbox: run one program's tests and write the outcome as JSON.

This file runs as a script (``python -I -S _sandbox_boot.py``), never imported by rolleval,
and uses the standard library only. The job arrives as JSON on stdin::

    {"isolate": true, "workdir": "...", "solution": "...", "tests": ["..."],
     "limits": {"cpu_s": 10, "memory_mb": 1024, "processes": 32, "file_mb": 16}}

With ``isolate`` the process starts as the first process of fresh user, network, mount and
PID namespaces (``unshare --user --map-root-user --net --mount --pid --fork
--mount-proc``). It then makes every mount read-only (``mount_setattr`` with
``AT_RECURSIVE``) and mounts a small private ``tmpfs`` on ``/tmp``, the only writable
place. A forked child drops every capability (bounding set included), sets
``no_new_privs`` and the resource limits, and runs the tests; the first process waits for
it and exits, which makes the kernel kill whatever the tests left running in the PID
namespace.

The outcome goes to the file descriptor ``result_fd`` of the job as one JSON object::

    {"stage": "tests", "tests_run": 3, "tests_passed": 2, "failure": "assertion",
     "message": "AssertionError: ..."}

``failure`` is ``null`` (all tests passed), ``syntax``, ``assertion`` or ``crash``; a
setup failure writes ``{"sandbox_error": "..."}`` instead. Code under test runs in the same
process as this harness and could write a forged outcome to that descriptor: the sandbox
protects the machine, not the score, from hostile code.
"""

import ctypes
import json
import os
import resource
import sys
import traceback

_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 0x1
_SYS_MOUNT_SETATTR = 442  # the same number on every Linux architecture (5.12+)
_MS_NOSUID, _MS_NODEV = 0x2, 0x4
_PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS, _PR_CAP_AMBIENT = 24, 38, 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_VERSION_3 = 0x20080522


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


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _cap_pid_numbers(processes):
    """Lower this PID namespace's pid_max (Linux 6.14+); best effort, the kernel minimum is 301.

    RLIMIT_NPROC is not enforced for the real root user; this bound is.
    """
    try:
        with open("/proc/sys/kernel/pid_max", "w") as fh:
            fh.write(str(max(301, int(processes) + 1)))
    except OSError:
        pass


def _isolate_filesystem(tmp_mb):
    """Every mount read-only, then a fresh private tmpfs on /tmp."""
    libc = _libc()
    attr = _MountAttr(attr_set=_MOUNT_ATTR_RDONLY)
    _check(
        libc.syscall(
            _SYS_MOUNT_SETATTR,
            _AT_FDCWD,
            b"/",
            _AT_RECURSIVE,
            ctypes.byref(attr),
            ctypes.sizeof(attr),
        ),
        "mount_setattr(/, read-only, recursive)",
    )
    options = f"size={int(tmp_mb)}m,mode=1777".encode()
    _check(
        libc.mount(b"tmpfs", b"/tmp", b"tmpfs", _MS_NOSUID | _MS_NODEV, options),
        "mount tmpfs on /tmp",
    )


def _drop_privileges():
    """No capabilities now or after any exec; no privilege gain through setuid files."""
    libc = _libc()
    for cap in range(64):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the last capability
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(version=_CAP_VERSION_3, pid=0)
    data = (_CapData * 2)()
    _check(libc.capset(ctypes.byref(header), data), "capset(none)")
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(no_new_privs)")


def _set_limits(limits):
    cpu = int(limits["cpu_s"])
    memory = int(limits["memory_mb"]) << 20
    files = int(limits["file_mb"]) << 20
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_NPROC, (int(limits["processes"]),) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (files, files))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _describe(exc):
    message = " ".join(str(exc).split())[:500]
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _run_tests(solution, tests):
    outcome = {"stage": "compile", "tests_run": 0, "tests_passed": 0, "failure": None}
    try:
        code = compile(solution, "solution.py", "exec")
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes in the source
        outcome.update(failure="syntax", message=_describe(exc))
        return outcome
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    outcome["stage"] = "solution"
    try:
        exec(code, namespace)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt included
        outcome.update(failure="crash", message=_describe(exc))
        return outcome
    outcome["stage"] = "tests"
    for number, test in enumerate(tests):
        outcome["tests_run"] = number + 1
        try:
            exec(compile(test, f"test_{number}.py", "exec"), namespace)
        except AssertionError as exc:
            outcome.update(failure="assertion", message=_describe(exc), failed_test=number)
            return outcome
        except BaseException as exc:
            outcome.update(failure="crash", message=_describe(exc), failed_test=number)
            return outcome
        outcome["tests_passed"] = number + 1
    return outcome


def _child(job, workdir, out):
    if job["isolate"]:
        _drop_privileges()
    _set_limits(job["limits"])
    os.chdir(workdir)
    os.environ.clear()
    os.environ.update(HOME=workdir, TMPDIR=workdir, PATH="/usr/bin:/bin", LANG="C.UTF-8")
    outcome = _run_tests(job["solution"], job["tests"])
    out.write(json.dumps(outcome) + "\n")
    out.flush()


def main():
    job = json.loads(sys.stdin.buffer.read())
    out = os.fdopen(int(job["result_fd"]), "w", encoding="utf-8")
    try:
        workdir = job["workdir"]
        if job["isolate"]:
            _cap_pid_numbers(job["limits"]["processes"])
            _isolate_filesystem(job["limits"]["tmp_mb"])
            workdir = "/tmp"
    except BaseException as exc:
        out.write(json.dumps({"sandbox_error": _describe(exc)}) + "\n")
        out.flush()
        os._exit(3)
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            _child(job, workdir, out)
        except BaseException:
            traceback.print_exc()
            code = 70
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    # The first process of the PID namespace: reap until the test process ends, then
    # return its status; leaving kills everything it left behind.
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(71)
        if done == pid:
            if os.WIFEXITED(status):
                os._exit(os.WEXITSTATUS(status))
            os._exit(128 + os.WTERMSIG(status))


if __name__ == "__main__":
    main()
