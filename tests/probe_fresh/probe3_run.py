"""Running one probe input and classifying what it did (issue #50's third probe).

A case is a dict: id, kind ('cli', 'signal', 'python'), argv (CLI arguments after the binary, or
for 'python' the expression to evaluate), expect ('bad': a clearly invalid input that must be
refused with exit 2, 'any': exit 0 or 2, 'good': exit 0), names (strings of which a refusal must
name at least one: the flag, key, file or value at fault), outputs (paths that existed before
with sentinel text; a failed command must leave them as they were), and optional limits
(as_mib: an address-space cap; signal: (signum, delay_s); max_seconds_given).
"""
import os
import re
import resource
import signal
import subprocess
import time

TIMEOUT_S = 20.0
AFTER_SIGNAL_S = 5.0

# Text that only a library or runtime prints, never one of iosim's own messages.
LIBRARY_TEXT = re.compile(
    r"json\.exception|std::|basic_string|terminate called|what\(\):|InternalError|"
    r"internal error|Traceback \(most recent|yaml-cpp|YAML::|bad_alloc|\bstoi\b|\bstod\b|"
    r"\bstoll\b|\bstoul\b|incompatible function arguments|AddressSanitizer|runtime error:|"
    r"Segmentation fault|core dumped|vector::_M|out_of_range|invalid_argument|bad_any_cast|"
    r"bad_optional|bad_variant|CLI::|__cxa|nlohmann")

CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGILL,
                 signal.SIGTRAP}


def _limits(as_mib):
    def apply():
        os.setsid()
        if as_mib:
            b = as_mib * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (b, b))
    return apply


def _snapshot(paths):
    out = {}
    for p in paths:
        try:
            with open(p, "rb") as f:
                out[p] = f.read()
        except OSError:
            out[p] = None
    return out


def _listing(d):
    found = set()
    for root, dirs, files in os.walk(d):
        for name in files + dirs:
            found.add(os.path.relpath(os.path.join(root, name), d))
    return found


def _kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        p.wait(5)
    except subprocess.TimeoutExpired:
        pass


def execute(case, binary, python, env, workdir):
    """Runs the case in workdir; returns (rc or None, stdout text, stderr text, note)."""
    sig = case.get("signal")
    if case["kind"] == "python":
        argv = [python, "-c", case["argv"]]
    else:
        argv = [binary] + case["argv"]
    stdout_target = subprocess.PIPE
    err_path = os.path.join(workdir, ".probe_stderr")
    out_path = os.path.join(workdir, ".probe_stdout")
    with open(err_path, "wb") as err, open(out_path, "wb") as out:
        p = subprocess.Popen(argv, cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                             stdout=stdout_target if sig else out, stderr=err,
                             preexec_fn=_limits(case.get("as_mib")))
        note = ""
        rc = None
        if sig:
            signum, delay = sig
            if signum:
                time.sleep(delay)
                try:
                    os.kill(p.pid, signum)
                except OSError:
                    pass
            # signum 0: no signal; the stop is the command's own --max-seconds of `delay` s.
            try:
                rc = p.wait(AFTER_SIGNAL_S + (0 if signum else delay))
            except subprocess.TimeoutExpired:
                note = (f"no exit {AFTER_SIGNAL_S:.0f} s after signal {signum} sent at {delay:.2f} s"
                        if signum else f"no exit {AFTER_SIGNAL_S:.0f} s after its --max-seconds "
                        f"{delay:g} with stdout unread")
                _kill_group(p)
            if p.stdout:
                p.stdout.close()
        else:
            try:
                rc = p.wait(TIMEOUT_S)
            except subprocess.TimeoutExpired:
                # A long simulation is not a hang if it stops when asked (docs/limits.md: within
                # about a second of SIGTERM); one that does not is.
                os.kill(p.pid, signal.SIGTERM)
                try:
                    rc = p.wait(AFTER_SIGNAL_S)
                    note = "slow"
                except subprocess.TimeoutExpired:
                    note = f"no exit within {TIMEOUT_S:.0f} s, nor {AFTER_SIGNAL_S:.0f} s after SIGTERM"
                    _kill_group(p)
    with open(err_path, "rb") as f:
        stderr = f.read().decode("utf-8", "replace")
    with open(out_path, "rb") as f:
        stdout = f.read(200000).decode("utf-8", "replace")
    os.unlink(err_path)
    os.unlink(out_path)
    return rc, stdout, stderr, note


def classify(case, rc, stdout, stderr, note, before, after, listing_before, listing_after):
    """Returns (class, detail): class is 'ok', 'crash', 'internal', 'hang', 'destructive',
    'silent', 'misleading' or 'exit' (an exit code iosim does not document)."""
    text = stderr if case["kind"] != "python" else stdout + stderr
    if note == "slow":
        return ("slow", f"past {TIMEOUT_S:.0f} s, stopped by SIGTERM (rc={rc})") if rc in (
            3, 143, -signal.SIGTERM) else ("hang", f"past {TIMEOUT_S:.0f} s; after SIGTERM rc={rc}")
    if note:
        return "hang", note
    if case["kind"] == "python":
        return _classify_python(case, rc, stdout, stderr)
    if rc < 0 and -rc in CRASH_SIGNALS or rc in (134, 136, 139) or "Sanitizer" in text:
        return "crash", f"rc={rc} {text.strip()[:200]}"
    sig = case.get("signal")
    if rc < 0 and not (sig and sig[0] and -rc == sig[0]):
        return "crash", f"killed by signal {-rc}"
    if LIBRARY_TEXT.search(text):
        m = LIBRARY_TEXT.search(text)
        return "internal", f"library text '{m.group(0)}': {text.strip()[:200]}"
    allowed = {0, 2}
    if sig or case.get("max_seconds_given"):
        allowed |= {3, 130, 143, -signal.SIGINT, -signal.SIGTERM, -signal.SIGPIPE}
    if rc not in allowed:
        return "exit", f"rc={rc} {text.strip()[:200]}"
    if rc != 0:
        for path, old in before.items():
            if after.get(path) != old:
                return "destructive", f"{path} changed by a command that exited {rc}"
        new = listing_after - listing_before
        new = {n for n in new if not n.endswith(".partial") and not n.startswith(".probe")}
        if new and not sig:
            return "destructive", f"left {sorted(new)[:3]} behind after exit {rc}"
        if rc == 2:
            if not text.strip():
                return "internal", "exit 2 with no message"
            names = case.get("names", [])
            low = text.lower()
            if names and not any(n.lower() in low for n in names if n):
                return "misleading", f"names none of {names[:4]}: {text.strip()[:200]}"
    elif case.get("expect") == "bad":
        return "silent", f"exit 0: {stdout.strip()[:120]!r}"
    return "ok", ""


def _classify_python(case, rc, stdout, stderr):
    if rc is None or rc < 0 or rc in (134, 139):
        return "crash", f"rc={rc} {stderr.strip()[-200:]}"
    last = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    if not last.startswith(("OK", "ERR")):
        return "internal", f"rc={rc} no result line: {stderr.strip()[-300:]}"
    if last.startswith("OK"):
        if case.get("expect") == "bad":
            return "silent", f"returned: {last[:150]}"
        return "ok", ""
    _, etype, msg = (last.split(" ", 2) + ["", ""])[:3]
    if etype not in ("ConfigError", "InfeasibleError", "ValueError", "TypeError",
                     "TimeoutError"):
        return "internal", f"{etype}: {msg[:200]}"
    if LIBRARY_TEXT.search(msg):
        return "internal", f"{etype} with library text: {msg[:200]}"
    names = case.get("names", [])
    if names and not any(n.lower() in msg.lower() for n in names if n):
        return "misleading", f"{etype} names none of {names[:4]}: {msg[:200]}"
    return "ok", ""


def run_case(case, binary, python, env, workdir):
    outs = [os.path.join(workdir, o) for o in case.get("outputs", [])]
    before = _snapshot(outs)
    inputs = _snapshot(case.get("inputs", []))
    listing_before = _listing(workdir)
    t0 = time.monotonic()
    rc, stdout, stderr, note = execute(case, binary, python, env, workdir)
    wall = time.monotonic() - t0
    after = _snapshot(list(before))
    listing_after = _listing(workdir)
    cls, detail = classify(case, rc, stdout, stderr, note, before, after, listing_before,
                           listing_after)
    changed = [p for p, old in inputs.items() if _snapshot([p])[p] != old]
    if changed and cls not in ("crash", "hang"):
        cls, detail = "destructive", f"input {changed[0]} changed (exit {rc})"
    if cls == "ok" and case.get("check"):
        cls, detail = case["check"](rc, stdout, stderr, workdir)
    return {"id": case["id"], "kind": case["kind"], "group": case.get("group", ""),
            "argv": case["argv"], "rc": rc, "class": cls, "detail": detail,
            "wall_s": round(wall, 2), "stderr": stderr.strip()[:300]}
