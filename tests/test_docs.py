"""The documentation stays true: README.md and docs/ name real flags, targets and files.

- Every `python <script>.py --flag`, `python -m <module> --flag` (also `.venv/bin/python ...`, and
  `<script>.py --flag` without `python` for the project's own scripts) written in a code block or an
  inline code span names a script that exists and a flag that script defines. The flags come from
  each script's own `--helpxml` (tools/flag_inventory.py: one subprocess that imports TensorFlow
  once and forks per script), so train.py's generated flags are covered and no model is built.
- Every `python -m X` names a module of the repository (or another program's, on an allow-list);
  every dotted name under a package of the repository (`common.models.build_encoder`) and every
  repository path written in code (`common/models/bert.py`, `docs/data.md`) exists. Data paths,
  URLs and placeholders are not looked for.
- Every `make <target> VAR=...` names a target of the Makefile and a variable it sets.
- Every relative link and image resolves to a file, and a `#heading` to a heading of that page. A
  page that a benchmark writes when it runs (`--results_dir` of bench/*.py) may be linked before it
  exists.
- docs/reference/flags.md is what `python -m tools.gen_flags_doc` writes today.
- The docs pages that the code's messages point to exist; user pages hold no machine paths, commit
  hashes or issue numbers; README.md stays short.

The checkers are plain functions, tested here on small inputs so that each can be seen to fail.
"""

from __future__ import annotations

import ast
import collections
import functools
import glob
import os
import re
import shlex
from typing import Dict, Iterator, List, Sequence, Set, Tuple

import pytest

from tools.flag_inventory import Flag, entry_point_path
from tools.gen_flags_doc import PAGE as FLAGS_PAGE
from tools.gen_flags_doc import SCRIPTS, load_inventory, render

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README_MAX_LINES = 200
# Pages written by their own benchmark carry this line (bench/pages.py), with the commit they ran at.
GENERATED_MARK = "do not edit by hand"

# === Reading markdown ===


def _exists_in_root(path: str) -> bool:
    return os.path.exists(os.path.join(ROOT, path))


_FENCE = re.compile(r"^\s*(```|~~~)(\S*)\s*$")
_INLINE_CODE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)


def user_pages() -> List[str]:
    """README.md and every page under docs/, relative to the repository root."""
    pages = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"),
                                                                               recursive=True))
    return [p.replace(os.sep, "/") for p in pages]


def split_markdown(text: str) -> Tuple[List[Tuple[str, int]], str]:
    """(fenced shell lines as (line, line number), prose with fenced blocks blanked).

    Backslash continuations are joined; `# comments` are cut; python blocks are left out (they are
    code, not commands). Prose keeps its line count so that positions map back to lines.
    """
    commands: List[Tuple[str, int]] = []
    prose: List[str] = []
    fence, language, pending, start = None, "", "", 0
    for number, line in enumerate(text.splitlines(), 1):
        match = _FENCE.match(line)
        if fence is None and match:
            fence, language = match.group(1), match.group(2).lower()
            prose.append("")
            continue
        if fence is not None:
            prose.append("")
            if match and match.group(1) == fence and not match.group(2):
                fence = None
                continue
            if language in ("python", "py", "json"):
                continue
            body = re.sub(r"(^|\s)#.*$", "", line)
            if not pending:
                start = number
            if body.rstrip().endswith("\\"):
                pending += body.rstrip()[:-1] + " "
                continue
            commands.append((pending + body, start))
            pending = ""
            continue
        prose.append(line)
    return commands, "\n".join(prose)


def code_texts(text: str) -> List[Tuple[str, int]]:
    """Every shell line of fenced blocks and every inline code span of the prose, with its line."""
    commands, prose = split_markdown(text)
    spans = []
    for paragraph_match in re.finditer(r"(?:[^\n]+\n?)+", prose):
        paragraph = paragraph_match.group(0)
        first_line = prose.count("\n", 0, paragraph_match.start()) + 1
        for match in _INLINE_CODE.finditer(paragraph):
            body = " ".join(match.group(2).split())
            if paragraph.lstrip().startswith("|"):  # a table cell: \| is a literal pipe
                body = body.replace("\\|", "|")
            spans.append((body, first_line + paragraph.count("\n", 0, match.start())))
    return commands + spans


# === Commands and flags ===

_PYTHON = r"(?:[\w./-]*/)?python3?"
_INVOCATION = re.compile(rf"(?:^|(?<=[\s(;&|]))(?:(?P<python>{_PYTHON})\s+)?"
                         r"(?:-m\s+(?P<module>[A-Za-z_][\w.]*)|(?P<script>[\w./-]+\.py))(?=\s|$)")
_STOP_TOKENS = {";", "&&", "||", "|", ">", ">>", "2>", "2>&1", "&"}
_FLAG = re.compile(r"^--(?P<name>[A-Za-z_][A-Za-z0-9_-]*)(?:=|$)")


@functools.lru_cache(maxsize=None)
def project_packages() -> frozenset:
    return frozenset(d for d in os.listdir(ROOT) if os.path.isfile(os.path.join(ROOT, d, "__init__.py")))


def find_invocations(code: str) -> Iterator[Tuple[str, List[str], bool]]:
    """(entry point as given, the flag names after it, written with `python`) for each invocation."""
    for match in _INVOCATION.finditer(code):
        entry = match.group("module") or match.group("script")
        tokens = code[match.end():].split()
        flags = []
        for token in tokens:
            if token in _STOP_TOKENS or token.startswith("#") or re.match(_PYTHON + "$", token) or token == "make":
                break
            flag = _FLAG.match(token)
            if flag:
                flags.append(flag.group("name"))
        yield entry, flags, bool(match.group("python") or match.group("module"))


def resolve_entry(entry: str, written_with_python: bool) -> Tuple[str, str]:
    """(entry point for the inventory, or "" to skip it; an error, or "").

    `python -m pytest` and other programs' modules are skipped; a `.py` named without `python` is
    checked only when it is a script of this repository (the root or bench/), so prose may name the
    original code's scripts.
    """
    if not entry.endswith(".py"):
        return (entry, "") if entry.split(".")[0] in project_packages() else ("", "")
    if os.path.isfile(os.path.join(ROOT, entry)):
        return entry, ""
    if not written_with_python:
        bench = "bench/" + os.path.basename(entry)
        return (bench, "") if os.path.isfile(os.path.join(ROOT, bench)) else ("", "")
    return "", f"`python {entry}`: no such script in the repository"


def command_problems(pages: Dict[str, str], inventory: Dict[str, Sequence[Flag]]) -> List[str]:
    """Every invocation whose script is missing or whose flag the script does not define."""
    problems = []
    for page, text in pages.items():
        for code, line in code_texts(text):
            for entry, flags, with_python in find_invocations(code):
                resolved, error = resolve_entry(entry, with_python)
                if error:
                    problems.append(f"{page}:{line}: {error}")
                if not resolved or not flags:
                    continue
                known = {f.name: f for f in inventory[resolved]}
                for name in flags:
                    negated = name.startswith("no") and known.get(name[2:]) and known[name[2:]].type == "bool"
                    if name not in known and not negated:
                        problems.append(f"{page}:{line}: `{entry} --{name}`: {entry} defines no flag --{name}")
    return problems


def entries_with_flags(pages: Dict[str, str]) -> List[str]:
    """The entry points the pages pass flags to (what the inventory must cover)."""
    found = set()
    for text in pages.values():
        for code, _ in code_texts(text):
            for entry, flags, with_python in find_invocations(code):
                resolved, _ = resolve_entry(entry, with_python)
                if resolved and flags:
                    found.add(resolved)
    return sorted(found)


# === Modules and files of the repository ===

# Other programs' modules the docs run with `python -m`: never looked for in the repository.
THIRD_PARTY_MODULES = frozenset({"pytest", "pip", "venv", "ruff"})
# A token of a code span or line that might be a path: path characters and placeholder marks.
_PATH_TOKEN = re.compile(r"[\w./<>${}*?~\[\]-]+")
_PLACEHOLDER = re.compile(r"[<>${}*?~\[\]]|\.\.\.")
_OUTPUT_FLAG = re.compile(r"--(?:\w*_dir|out|output)=$")
_DOTTED = re.compile(r"(?<![\w./-])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w/-])")


@functools.lru_cache(maxsize=None)
def top_level() -> frozenset:
    """Names at the repository's top level, as a checkout has them: hidden names and what .gitignore
    lists at the top (`artifacts/`, `/data`: a run's outputs and the data root) are left out."""
    ignored = set()
    with open(os.path.join(ROOT, ".gitignore")) as f:
        for line in f:
            name = line.strip().strip("/")
            if name and not re.search(r"[*?\[/!#]", name):
                ignored.add(name)
    return frozenset(n for n in os.listdir(ROOT) if not n.startswith(".") and n not in ignored)


def repository_paths(code: str, top: Set[str]) -> Iterator[str]:
    """The repository-relative paths a code span or line names: tokens with a `/` whose first part is
    a top-level name of the repository (`common/models/bert.py`, `docs/data.md`, `tests/`). Data paths
    (`downstream/STS/...`, `../shared/data`, `<DATA_PATH>/...`, `artifacts/...`), URLs, globs,
    placeholders and the value of a flag that names where a command writes (`--results_dir=...`,
    `--out=...`) are not."""
    for match in _PATH_TOKEN.finditer(code):
        if _PLACEHOLDER.search(match.group(0)):
            continue
        token = match.group(0).rstrip(".,;")
        if "/" not in token or token.startswith(("/", ".")):
            continue
        if code[max(0, match.start() - 2):match.start()] == ":/" or code[match.start() - 1:match.start()] == "@":
            continue  # a URL's host or a repository@commit
        if _OUTPUT_FLAG.search(code, 0, match.start()):
            continue  # where a command writes (`--results_dir=docs/benchmarks/new`): it need not exist yet
        if token.split("/", 1)[0] in top:
            yield token


def module_exists(module: str, root: str = ROOT) -> bool:
    """Whether a dotted module is a .py file or a package of the repository."""
    path = os.path.join(root, *module.split("."))
    return os.path.isfile(path + ".py") or os.path.isfile(os.path.join(path, "__init__.py"))


def module_mentions(module: str, name: str, root: str = ROOT) -> bool:
    """Whether an existing module's source names `name` (defines, imports or re-exports it)."""
    path = os.path.join(root, *module.split("."))
    path = path + ".py" if os.path.isfile(path + ".py") else os.path.join(path, "__init__.py")
    with open(path, encoding="utf-8") as f:
        return re.search(rf"\b{re.escape(name)}\b", f.read()) is not None


def dotted_name_problem(name: str, is_module, mentions) -> str:
    """"" when the longest module prefix of a dotted name (`common.models.build_encoder`) exists and
    names the next part; else what is missing. Later parts (a class's attributes) are not checked."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        module = ".".join(parts[:k])
        if is_module(module):
            if k < len(parts) and not mentions(module, parts[k]):
                return f"`{name}`: {module} has no {parts[k]}"
            return ""
    return f"`{name}`: no module {parts[0]} in the repository"


def reference_problems(pages: Dict[str, str], top: Set[str], packages: Set[str], exists=_exists_in_root,
                       is_module=module_exists, mentions=module_mentions) -> List[str]:
    """What code (inline or in a block) names in the repository that does not exist:
    - `python -m X` where X is neither a module of the repository nor in THIRD_PARTY_MODULES;
    - a dotted name under one of the repository's packages (`common.models.build_encoder`) whose
      module does not exist or does not name the next part;
    - a repository path (`repository_paths`).

    Args:
        pages: dict. Page path -> its text.
        top: set of str. The repository's top-level names (`top_level()`).
        packages: set of str. Its top-level packages (`project_packages()`).
        exists, is_module, mentions: whether a repository-relative path exists, a dotted module
            exists, and a module names a name.
    """
    problems = []
    for page, text in pages.items():
        for code, line in code_texts(text):
            for match in _INVOCATION.finditer(code):
                module = match.group("module")
                if module and module not in THIRD_PARTY_MODULES and not is_module(module):
                    problems.append(f"{page}:{line}: `python -m {module}`: no such module in the repository"
                                    + ("" if module.split(".")[0] in top else " (another program's? add it to "
                                                                              "THIRD_PARTY_MODULES)"))
            for match in _DOTTED.finditer(code):
                name = match.group(0)
                if name.split(".")[0] in packages and not re.search(r"-m\s+$", code[:match.start()]):
                    problem = dotted_name_problem(name, is_module, mentions)
                    if problem:
                        problems.append(f"{page}:{line}: {problem}")
            for path in repository_paths(code, top):
                if not exists(path.rstrip("/")):
                    problems.append(f"{page}:{line}: `{path}` does not exist in the repository")
    return problems


# === make ===


@functools.lru_cache(maxsize=None)
def makefile() -> Tuple[frozenset, frozenset]:
    """(targets, variables) of the Makefile."""
    with open(os.path.join(ROOT, "Makefile")) as f:
        text = f.read()
    targets = set(re.findall(r"^([A-Za-z0-9_][\w.-]*)\s*:(?!=)", text, re.M))
    variables = set(re.findall(r"^([A-Za-z_]\w*)\s*(?:\?|:|\+)?=", text, re.M))
    return frozenset(targets), frozenset(variables)


def _shell_words(text: str) -> List[str]:
    try:
        return shlex.split(text)
    except ValueError:  # an unbalanced quote in prose: whitespace words will do
        return text.split()


def make_problems(pages: Dict[str, str], targets: Set[str], variables: Set[str]) -> List[str]:
    """`make` commands (at the start of a code span or line, or after `;`, `&&`, `||`) whose target
    or variable the Makefile does not have. `<placeholders>` are not checked."""
    problems = []
    for page, text in pages.items():
        for code, line in code_texts(text):
            for match in re.finditer(r"(?:^\s*|(?:;|&&|\|\|)\s*)make\s+([^;&|#]*)", code):
                for token in _shell_words(match.group(1)):
                    if token.startswith("-") or "<" in token:
                        continue
                    if "=" in token:
                        name = token.split("=", 1)[0]
                        if name not in variables:
                            problems.append(f"{page}:{line}: `make ... {token}`: the Makefile sets no {name}")
                    elif token not in targets:
                        problems.append(f"{page}:{line}: `make {token}`: the Makefile has no target {token}")
    return problems


# === Links ===

_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
_HTML_TARGET = re.compile(r"<(?:a|img)\b[^>]*\b(?:href|src)=\"([^\"]+)\"", re.I)


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(text: str) -> Set[str]:
    """The anchors of a page: its headings (GitHub's ids, -1, -2 for repeats) and explicit ids."""
    _, prose = split_markdown(text)
    seen: Dict[str, int] = collections.Counter()
    anchors = set(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", prose))
    for match in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", prose, re.M):
        anchor = github_anchor(match.group(1))
        anchors.add(anchor if not seen[anchor] else f"{anchor}-{seen[anchor]}")
        seen[anchor] += 1
    return anchors


@functools.lru_cache(maxsize=None)
def benchmark_pages() -> frozenset:
    """Pages benchmarks write when they run: `<--results_dir default>/README.md` of each bench/*.py."""
    pages = set()
    for path in glob.glob(os.path.join(ROOT, "bench", "*.py")):
        with open(path) as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", "").startswith("DEFINE_")
                    and len(node.args) >= 2 and all(isinstance(a, ast.Constant) for a in node.args[:2])
                    and node.args[0].value == "results_dir"):
                pages.add(posixpath_join(node.args[1].value, "README.md"))
    return frozenset(pages)


def posixpath_join(*parts: str) -> str:
    return os.path.normpath(os.path.join(*parts)).replace(os.sep, "/")


def link_targets(text: str) -> Iterator[Tuple[str, int]]:
    _, prose = split_markdown(text)
    prose = _INLINE_CODE.sub(lambda m: " " * len(m.group(0)), prose)  # a link inside code is not a link
    for pattern in (_LINK, _REFERENCE, _HTML_TARGET):
        for match in pattern.finditer(prose):
            yield match.group(1), prose.count("\n", 0, match.start()) + 1


def _read(page: str) -> str:
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        return f.read()


def link_problems(pages: Dict[str, str], read=_read, exists=_exists_in_root) -> List[str]:
    """Relative links and images that do not resolve, and anchors a page does not have.

    Args:
        pages: dict. Page path (relative to the repository root) -> its text.
        read, exists: how to read a linked page and whether a path exists (the repository's files).
    """
    problems = []
    for page, text in pages.items():
        for target, line in link_targets(text):
            if re.match(r"^[A-Za-z][\w+.-]*:", target):  # https:, mailto:, ...
                continue
            if target.startswith("/"):
                problems.append(f"{page}:{line}: ({target}): an absolute path; link relative to the page")
                continue
            path, _, anchor = target.partition("#")
            resolved = posixpath_join(os.path.dirname(page), path) if path else page
            if resolved.startswith("../"):
                problems.append(f"{page}:{line}: ({target}) points outside the repository")
            elif not exists(resolved) and not (path and resolved in benchmark_pages() and not anchor):
                problems.append(f"{page}:{line}: ({target}): {resolved} does not exist")
            elif anchor and exists(resolved) and resolved.endswith(".md"):
                target_text = text if resolved == page else read(resolved)
                if anchor not in anchors_of(target_text):
                    problems.append(f"{page}:{line}: ({target}): {resolved} has no heading #{anchor}")
    return problems


# === Fixtures ===


@pytest.fixture(scope="module")
def pages() -> Dict[str, str]:
    return {p: open(os.path.join(ROOT, p), encoding="utf-8").read() for p in user_pages()}


@pytest.fixture(scope="module")
def inventory(pages) -> Dict[str, Sequence[Flag]]:
    """Every flag of the scripts the pages pass flags to, and of the scripts in the flag reference."""
    return load_inventory(sorted(set(entries_with_flags(pages)) | set(SCRIPTS)))


# === The documentation ===


def test_commands_name_existing_scripts_and_flags(pages, inventory):
    problems = command_problems(pages, inventory)
    assert not problems, "Commands in the docs that would fail:\n" + "\n".join(problems)


def test_make_commands_name_existing_targets_and_variables(pages):
    targets, variables = makefile()
    problems = make_problems(pages, targets, variables)
    assert not problems, "make commands in the docs that would fail:\n" + "\n".join(problems)


def test_relative_links_and_images_resolve(pages):
    extra = {p: open(os.path.join(ROOT, p), encoding="utf-8").read() for p in ("CHANGELOG.md",)}
    problems = link_problems({**pages, **extra})
    assert not problems, "Broken links:\n" + "\n".join(problems)


def test_modules_and_repository_files_named_in_code_exist(pages):
    problems = reference_problems(pages, top_level(), project_packages())
    assert not problems, "Modules and files named in the docs that do not exist:\n" + "\n".join(problems)


def test_flag_reference_is_current(inventory):
    with open(os.path.join(ROOT, FLAGS_PAGE), encoding="utf-8") as f:
        committed = f.read()
    assert committed == render({s: inventory[s] for s in SCRIPTS}), (
        f"{FLAGS_PAGE} differs from the scripts' flags: run `python -m tools.gen_flags_doc` and commit it.")


def test_docs_pages_named_in_the_code_exist():
    problems = []
    sources = [p for p in glob.glob(os.path.join(ROOT, "**", "*.py"), recursive=True)
               if not os.path.relpath(p, ROOT).startswith((".venv", "tests"))]
    for path in sources:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for match in re.finditer(r"\bdocs/[\w./-]*[\w/]", text):
            named = match.group(0)
            readme = posixpath_join(named, "README.md")
            if not os.path.exists(os.path.join(ROOT, named)) and readme not in benchmark_pages():
                problems.append(f"{os.path.relpath(path, ROOT)}: names {named}, which does not exist")
        if re.search(r"README\.md, section", text):
            problems.append(f"{os.path.relpath(path, ROOT)}: points to a README section; point to a docs/ page")
    assert not problems, "\n".join(problems)


def test_user_pages_hold_no_machine_paths_hashes_or_issue_numbers(pages):
    problems = []
    for page, text in pages.items():
        for number, line in enumerate(text.splitlines(), 1):
            if re.search(r"(?<![\w.~])/(?:work|home|root|Users|mnt|tmp)/", line):
                problems.append(f"{page}:{number}: an absolute machine path: {line.strip()[:120]}")
            if GENERATED_MARK in text:  # a benchmark's own page records its commit on purpose
                continue
            for word in re.findall(r"(?<![\w/.#-])[0-9a-f]{7,40}(?![\w/.-])", line):
                if re.search(r"[a-f]", word) and re.search(r"\d", word):
                    problems.append(f"{page}:{number}: looks like a commit hash: {word}")
            # MRPC's own column names ("#1 String", "#2 ID") are data, not issue numbers.
            if re.search(r"\bissue\s+\d+|(?<![\w&])#\d+\b(?! (?:String|ID)\b)|\b[\w-]+/[\w-]+#\d+", line, re.I):
                problems.append(f"{page}:{number}: an issue number: {line.strip()[:120]}")
    assert not problems, "History belongs in CHANGELOG.md:\n" + "\n".join(problems)


def test_readme_is_short(pages):
    lines = pages["README.md"].count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail to a page under docs/."


# === The checkers can fail ===

_FAKE_FLAGS = {"train.py": [Flag("method", "common.flags", "string enum", "pause", "", True),
                            Flag("eval_each_epoch", "train.py: every method", "bool", "None", "", True)],
               "bench.reproduce": [Flag("stages", "bench/reproduce.py", "comma separated list of strings", "", "",
                                        True)]}


def test_command_check_catches_a_misspelled_flag_and_a_missing_script():
    page = ("Run `python train.py --methd=pause`, then\n\n```bash\n.venv/bin/python -m bench.reproduce \\\n"
            "    --stage=pause   # comment --not_a_flag\npython no_such_script.py --x=1\n```\n"
            "`train.py --method=pause --noeval_each_epoch` and `ft_stsb.py --anything` are fine.\n")
    problems = command_problems({"page.md": page}, _FAKE_FLAGS)
    assert problems == ["page.md:4: `bench.reproduce --stage`: bench.reproduce defines no flag --stage",
                        "page.md:6: `python no_such_script.py`: no such script in the repository",
                        "page.md:1: `train.py --methd`: train.py defines no flag --methd"]


def test_make_check_catches_a_missing_target_and_variable():
    page = ("```bash\nmake demo DATA_PATH=x   # fine\nmake dmeo DATA_PTH=x\n```\n"
            "`make test PYTEST_ARGS=\"-k tokenization\"`, `make <target>`; prose may say make sure, "
            "`free space or make the destination writable`.\n")
    problems = make_problems({"p.md": page}, {"demo", "test"}, {"DATA_PATH", "PYTEST_ARGS"})
    assert problems == ["p.md:3: `make dmeo`: the Makefile has no target dmeo",
                        "p.md:3: `make ... DATA_PTH=x`: the Makefile sets no DATA_PTH"]


def test_link_check_catches_missing_files_and_headings():
    pages = {"docs/a.md": "# A page\n\n## Its part `x`\n\nSee [b](b.md), [part](#its-part-x), [gone](#gone),\n"
                          "![pic](img/missing.png), [web](https://example.com), `[in code](nowhere.md)`.\n",
             "docs/b.md": "# B\n\n[back](a.md#its-part-x) [no](a.md#no-such) [up](../../outside.md)\n"}
    problems = link_problems(pages, read=pages.__getitem__, exists=pages.__contains__)
    assert problems == ["docs/a.md:5: (#gone): docs/a.md has no heading #gone",
                        "docs/a.md:6: (img/missing.png): docs/img/missing.png does not exist",
                        "docs/b.md:3: (a.md#no-such): docs/a.md has no heading #no-such",
                        "docs/b.md:3: (../../outside.md) points outside the repository"]


def test_reference_check_catches_missing_modules_names_and_files_and_passes_existing_ones():
    files = {"common/models/bert.py", "common/models/__init__.py", "docs/data.md", "bench/ablation.py", "tests"}
    sources = {"common.models": "from common.models.bert import BertConfig", "common.models.bert": "class BertConfig:"}
    page = ("Run `python -m bench.ablation --x=1` and `python -m bench.gone`, then `python -m pytest tests/` and\n"
            "`.venv/bin/python -m pip install -r requirements.txt`; see `common/models/bert.py:12`,\n"
            "`common/models/gone.py`, `docs/data.md#training-data` and `docs/missing.md`.\n"
            "`common.models.BertConfig(hidden=2)`, `common.models.bert.BertConfig.size`, `common.models.Gone`,\n"
            "`common.gone.x`, `config.json`, `bench/ablation.py` and `np.float32` are names.\n\n"
            "```bash\npython -m othertool.main --flag   # comment common/not_checked.py\n"
            "python bench/removed.py --data_path=../shared/data --results_dir=docs/new   # data, outputs: not checked\n"
            "ls <DATA_PATH>/downstream/STS/ artifacts/model/x downstream/SICK/a.txt common/*.py\n"
            "git clone https://github.com/tests/x.git JohnGiorgi/DeCLUTR@v1 docs/... bench/<name>.py\n```\n")
    def is_module(m):
        return m.replace(".", "/") + ".py" in files or m.replace(".", "/") + "/__init__.py" in files

    problems = reference_problems({"p.md": page}, {"common", "docs", "bench", "tests", "README.md"},
                                  {"common", "bench"}, exists=files.__contains__,
                                  is_module=lambda m: is_module(m) or m in ("common", "bench"),
                                  mentions=lambda m, n: n in sources.get(m, ""))
    assert problems == [
        "p.md:8: `python -m othertool.main`: no such module in the repository (another program's? add it to "
        "THIRD_PARTY_MODULES)",
        "p.md:9: `bench/removed.py` does not exist in the repository",
        "p.md:1: `python -m bench.gone`: no such module in the repository",
        "p.md:3: `common/models/gone.py` does not exist in the repository",
        "p.md:3: `docs/missing.md` does not exist in the repository",
        "p.md:4: `common.models.Gone`: common.models has no Gone",
        "p.md:5: `common.gone.x`: common has no gone"]
    assert module_exists("common.training.runs") and module_exists("bench") and not module_exists("bench.gone")
    assert module_mentions("common.models", "build_encoder") and not module_mentions("common", "build_encoder")
    assert {"common", "docs", "train.py", "README.md"} <= top_level() and not {"artifacts", "data"} & top_level()


def test_github_anchors():
    assert github_anchor("Gradient caching: `--mini_batch_size`") == "gradient-caching---mini_batch_size"
    assert github_anchor("Optional: the reference environment (PyTorch + sentence-transformers)") == (
        "optional-the-reference-environment-pytorch--sentence-transformers")
    assert anchors_of("# X\n## A\n## A\n") == {"x", "a", "a-1"}


def test_entry_points_resolve_as_the_shell_would():
    assert resolve_entry("bench.reproduce", True) == ("bench.reproduce", "")
    assert resolve_entry("pytest", True) == ("", "")
    assert resolve_entry("st_worker.py", False) == ("bench/st_worker.py", "")
    assert entry_point_path("bench.reproduce") == "bench/reproduce.py"


def test_the_examples_in_the_public_apis_docstrings_run_as_written():
    """The public classes and functions show an Example (SentenceModel and similarity, SentenceEncoder and
    from_preset, build_encoder, export_model, the evaluators, the registry and each method's options); each
    runs and prints what it says."""
    import doctest

    from common import api
    from common.evaluation import evaluators
    from common.export import export_model
    from common.models.encoder import SentenceEncoder, build_encoder
    from common.training import registry
    from declutr_tf.config import DeclutrOptions
    from mlm_tf.config import MlmOptions
    from pause_tf.config import PauseOptions
    from simcse_tf.config import SimcseOptions
    from trans_encoder_tf.config import TransEncoderOptions

    for obj in (api.SentenceModel, api.similarity, SentenceEncoder, SentenceEncoder.from_preset, build_encoder,
                export_model, registry.build_config, evaluators, evaluators.Evaluator, evaluators.StsbDevEvaluator,
                evaluators.ScoredPairsEvaluator, evaluators.BinaryPairsEvaluator, PauseOptions, DeclutrOptions,
                SimcseOptions, TransEncoderOptions, MlmOptions):
        assert ">>>" in obj.__doc__, obj
        finder, runner = doctest.DocTestFinder(recurse=False), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        for test in finder.find(obj, globs={}):
            result = runner.run(test)
            assert result.failed == 0 and result.attempted > 0, (obj, result)
