"""Writes docs/reference/flags.md: every script's own flags, as the script itself reports them.

    python -m tools.gen_flags_doc            # rewrite the page
    python -m tools.gen_flags_doc --check    # exit 1 if the page differs from what the scripts define

The flags come from each script's `--helpxml` (tools/flag_inventory.py), keeping the project's
own flags (not absl's or TensorFlow's). tests/test_docs.py renders the page the same way and
fails when the committed one differs, so a flag added to a script or a config needs this command.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
from typing import Dict, List, Sequence

from tools.flag_inventory import ROOT, Flag

# The scripts a user runs; benchmarks (bench/) are documented on their results pages.
SCRIPTS = ("train.py", "test_sts.py", "senteval_eval.py", "cluster_eval.py", "retrieval_eval.py", "export.py",
           "download_nli.py", "check_sentence_transformers.py")
PAGE = os.path.join("docs", "reference", "flags.md")
EVERY_METHOD = "train.py: every method"
# train.py's generated flags default to "unset" and name the method's default at the end of their help.
_DEFAULTS_SUFFIX = re.compile(r"\s*\[((?:default: )?[^\[\]]*)\]$")
_CHOICES_PREFIX = re.compile(r"^<([^<>]*\|[^<>]*)>:\s*")


def load_inventory(entries: Sequence[str]) -> Dict[str, List[Flag]]:
    """Runs tools.flag_inventory in a process of its own (see its docstring) and returns its flags."""
    done = subprocess.run([sys.executable, "-m", "tools.flag_inventory", *entries], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"tools.flag_inventory failed:\n{done.stderr[-4000:]}")
    return {entry: [Flag(**f) for f in flags] for entry, flags in json.loads(done.stdout).items()}


def _summary(script: str) -> str:
    """The first paragraph of the script's docstring, on one line."""
    with open(os.path.join(ROOT, script)) as f:
        doc = ast.get_docstring(ast.parse(f.read())) or ""
    return " ".join(doc.strip().split("\n\n")[0].split())


def _cell(text: str) -> str:
    """Markdown table cell: pipes escaped, `<...>` kept visible (GitHub would take it for an HTML tag)."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace("*", "\\*")


def _row(flag: Flag) -> str:
    help_text, default = flag.help, flag.default
    choices = _CHOICES_PREFIX.match(help_text)
    if choices:
        help_text = help_text[choices.end():]
    suffix = _DEFAULTS_SUFFIX.search(help_text)
    if suffix and default in ("", "None"):
        help_text = help_text[:suffix.start()]
        default = suffix.group(1).removeprefix("default: ")
    if default == "":
        default = "''" if flag.type == "string" else "unset"
    kind = "bool" if flag.type == "bool" else flag.type.replace("string enum", "enum")
    if choices:
        kind = "one of " + ", ".join(f"`{c}`" for c in choices.group(1).split("|"))
    name = f"`--[no]{flag.name}`" if flag.type == "bool" else f"`--{flag.name}`"
    return f"| {name} | {_cell(kind)} | {_cell(default)} | {_cell(help_text)} |"


def _table(flags: Sequence[Flag]) -> List[str]:
    return ["| flag | type | default | meaning |", "| --- | --- | --- | --- |",
            *[_row(f) for f in sorted(flags, key=lambda f: f.name)], ""]


def render(found: Dict[str, List[Flag]]) -> str:
    """The page's text for the inventory of SCRIPTS."""
    lines = ["# Command-line flags", "",
             "Written by `python -m tools.gen_flags_doc` from each script's own `--helpxml`; do not edit by hand "
             "(`tests/test_docs.py` fails when this page and the scripts disagree). Only the project's own flags "
             "are listed. Every script also takes absl's `--helpshort` (its flags and defaults), `--helpfull` "
             "(every flag, absl's and TensorFlow's included) and `--flagfile=<file>`; a boolean `--name` is "
             "turned off with `--noname`. How scripts report errors: [errors.md](errors.md).", ""]
    lines += [f"- [`{s}`](#{s.replace('.', '')}): {_summary(s)}" for s in SCRIPTS] + [""]
    for script in SCRIPTS:
        own = [f for f in found[script] if f.own]
        lines += [f"## {script}", "", _summary(script), ""]
        if script != "train.py":
            lines += _table(own)
            continue
        lines += ["A flag left unset takes the chosen method's default (shown per method where they differ); a "
                  "flag the chosen method does not use is an error.", "", "### Every method", ""]
        lines += _table([f for f in own if not f.module.startswith("method ")])
        groups = sorted({f.module for f in own if f.module.startswith("method ")}, key=lambda m: (m.count(","), m))
        for group in groups:
            methods = group.removeprefix("method ").split(", ")
            lines += [f"### {' and '.join(f'--method={m}' for m in methods)}", ""]
            lines += _table([f for f in own if f.module == group])
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="Only compare: exit 1 if the page is out of date.")
    args = parser.parse_args(argv)
    text = render(load_inventory(SCRIPTS))
    path = os.path.join(ROOT, PAGE)
    if args.check:
        current = open(path).read() if os.path.exists(path) else ""
        if current != text:
            sys.stderr.write(f"{PAGE} is out of date: run `python -m tools.gen_flags_doc`.\n")
            return 1
        return 0
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
