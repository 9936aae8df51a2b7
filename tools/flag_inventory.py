"""The flags each command-line entry point accepts, read from the entry point's own `--helpxml`.

A script's flags are partly generated (train.py's come from the config dataclasses of every
registered method), so the only reliable inventory is the one absl builds when the script runs.
Running `python <script> --helpxml` once per script would import TensorFlow each time (5-15 s on a
small machine); instead this process imports TensorFlow once and forks one child per entry point,
which runs it as `__main__` with `--helpxml` (absl prints every flag as XML and exits before `main`).
Scripts that parse with argparse (those that also run in the PyTorch reference environment, and
tools.gen_flags_doc) are read from their `add_argument` calls instead.

    python -m tools.flag_inventory train.py bench.reproduce   # JSON: entry point -> its flags

Run it in a process of its own (as tests/test_docs.py does): the children inherit the parent's
absl flags, so a process that has already imported a script would see duplicate flags.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
import runpy
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from typing import Dict, List, Sequence, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass(frozen=True)
class Flag:
    """One flag as absl's --helpxml describes it."""

    name: str
    module: str  # absl's "file": the defining module, or train.py's group ("train.py: every method")
    type: str
    default: str
    help: str
    own: bool  # defined by this project, not by absl (--helpfull, --logtostderr, ...) or TensorFlow


def _project_names() -> frozenset:
    """Top-level names of this repository: packages (`common`, `bench`, `pause_tf`, ...) and scripts."""
    names = set()
    for entry in os.listdir(ROOT):
        if entry.endswith(".py"):
            names.add(entry[:-3])
        elif os.path.isfile(os.path.join(ROOT, entry, "__init__.py")):
            names.add(entry)
    return frozenset(names)


def _flag(name: str, module: str, type_: str, default: str, help_text: str) -> Flag:
    if os.path.isabs(module):  # absl names a module run as __main__ by its path
        module = os.path.relpath(module, ROOT)
    first = re.split(r"[./: ]", module, maxsplit=1)[0]
    own = module.startswith("method ") or first in _project_names()
    return Flag(name, module, type_, default, " ".join(help_text.split()), own)


def entry_point_path(entry: str) -> str:
    """`train.py` or `bench/x.py` as given; `bench.x` (a `python -m` module) as its file."""
    return entry if entry.endswith(".py") else entry.replace(".", "/") + ".py"


def parser_kind(path: str) -> str:
    """"argparse" or "absl": how the entry point parses its command line.

    Raises:
        ValueError: for a file that uses neither (running it would not print its flags).
    """
    with open(os.path.join(ROOT, path)) as f:
        text = f.read()
    if "argparse.ArgumentParser(" in text:
        return "argparse"
    if "absl" in text or "cli.run(" in text:  # common.cli.run is absl's app.run
        return "absl"
    raise ValueError(f"{path} parses its command line with neither absl nor argparse.")


def argparse_flags(path: str) -> List[Flag]:
    """The `--options` of a script that parses with argparse, from its `add_argument` calls."""
    with open(os.path.join(ROOT, path)) as f:
        tree = ast.parse(f.read())
    found = [_flag("help", "argparse", "bool", "false", "show this help message and exit")]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            keywords = {k.arg: k.value for k in node.keywords}
            default, help_text = keywords.get("default"), keywords.get("help")
            kind = {"int": "integer", "float": "float"}.get(getattr(keywords.get("type"), "id", ""), "string")
            if getattr(keywords.get("action"), "value", "") in ("store_true", "store_false"):
                kind = "switch"  # `--x` alone; not absl's bool, which also takes --nox
            for arg in node.args:
                if isinstance(arg, ast.Constant) and str(arg.value).startswith("--"):
                    found.append(_flag(arg.value[2:], path, kind,
                                       "required" if getattr(keywords.get("required"), "value", False)
                                       else repr(default.value) if isinstance(default, ast.Constant) else "",
                                       help_text.value if isinstance(help_text, ast.Constant) else ""))
    return found


def parse_helpxml(text: str) -> List[Flag]:
    return [_flag(f.findtext("name"), f.findtext("file") or "", f.findtext("type") or "",
                  f.findtext("default") or "", f.findtext("meaning") or "")
            for f in ET.fromstring(text).iter("flag")]


def _run_helpxml_in_child(entry: str, out_path: str) -> None:
    """In a forked child: runs `entry` as __main__ with --helpxml, stdout to `out_path`. Never returns."""
    code = 1
    try:
        os.chdir(ROOT)
        os.dup2(os.open(out_path + ".err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
        os.dup2(os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
        path = entry_point_path(entry)
        sys.argv = [path, "--helpxml"]
        try:
            if entry.endswith(".py"):
                sys.path.insert(0, os.path.dirname(os.path.join(ROOT, path)))
                runpy.run_path(path, run_name="__main__")
            else:
                runpy.run_module(entry, run_name="__main__", alter_sys=True)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        sys.stdout.flush()
    finally:
        os._exit(code)


def inventory(entries: Sequence[str], parallel: int = 2, timeout_s: float = 180.0) -> Dict[str, List[Flag]]:
    """Entry point (`train.py`, `bench.reproduce`, `bench/x.py`) -> every flag it accepts, absl's own included.

    Raises:
        FileNotFoundError: an entry point that is not a file of this repository.
        RuntimeError: an entry point whose --helpxml printed no flags (its stderr is in the message).
    """
    result: Dict[str, List[Flag]] = {}
    absl_entries = []
    for entry in dict.fromkeys(entries):
        path = entry_point_path(entry)
        if not os.path.isfile(os.path.join(ROOT, path)):
            raise FileNotFoundError(f"No such entry point: {entry} ({path})")
        if parser_kind(path) == "argparse":
            result[entry] = argparse_flags(path)
        else:
            absl_entries.append(entry)
    if absl_entries:
        sys.path.insert(0, ROOT)
        from common import cli  # noqa: F401  imports TensorFlow (quietly) once, before the forks

        with tempfile.TemporaryDirectory() as scratch:
            result.update(_fork_all(absl_entries, scratch, parallel, timeout_s))
    return {entry: result[entry] for entry in entries}


def _fork_all(entries: Sequence[str], scratch: str, parallel: int, timeout_s: float) -> Dict[str, List[Flag]]:
    result: Dict[str, List[Flag]] = {}
    pending = list(enumerate(entries))
    running: Dict[int, Tuple[str, str, float]] = {}
    while pending or running:
        while pending and len(running) < parallel:
            number, entry = pending.pop(0)
            out_path = os.path.join(scratch, f"{number}.xml")
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _run_helpxml_in_child(entry, out_path)
            running[pid] = (entry, out_path, time.monotonic())
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            for child, (_, _, started) in running.items():
                if time.monotonic() - started > timeout_s:
                    os.kill(child, 9)
            time.sleep(0.02)
            continue
        entry, out_path, _ = running.pop(pid)
        text = open(out_path).read() if os.path.exists(out_path) else ""
        if "</AllFlags>" not in text:  # absl exits with 1 after --helpxml: the XML is what tells success
            err = open(out_path + ".err").read()[-3000:] if os.path.exists(out_path + ".err") else ""
            raise RuntimeError(f"`python {entry_point_path(entry)} --helpxml` printed no flags "
                               f"(exit status {os.waitstatus_to_exitcode(status)}):\n{err}")
        result[entry] = parse_helpxml(text)
    return result


def main(argv: Sequence[str]) -> None:
    found = inventory(argv)
    json.dump({entry: [dataclasses.asdict(f) for f in flags] for entry, flags in found.items()}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
