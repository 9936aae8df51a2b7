"""Imports in common/ run one way, from the ground up (docs/contributing.md's layout): errors and
compat -> artifacts -> data -> models -> loading -> evaluation, export -> training -> the scripts' flags.
Every import counts, those inside functions too, so a loop cannot hide in a function body."""

import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMMON = os.path.join(ROOT, "common")

# Each part of common/ and its floor: a part imports only parts on lower floors (and itself).
FLOORS = {
    "errors": 0, "compat": 0, "quiet": 0, "settings": 0, "figures": 0, "notices": 0,
    "artifacts": 1,
    "data": 2,
    "models": 3,
    "loading": 4,
    "evaluation": 5, "export": 5, "api": 5,
    "training": 6,
    "flags": 7, "cli": 7,
}


def part_of(module: str) -> str:
    """`common.models.encoder` -> "models"; "" for `common` itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "common" else ""


def imported_modules(tree: ast.AST):
    """Every `common...` module a file imports, at any depth: (line, module)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "common":  # from common import artifacts, compat
                for alias in node.names:
                    yield node.lineno, f"common.{alias.name}"
            else:
                yield node.lineno, node.module


def upward_imports():
    """(file:line, importer's part, imported part) for each import that does not run down."""
    found = []
    for folder, _, files in os.walk(COMMON):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, ROOT)
            importer = part_of(relative[:-3].replace(os.sep, "."))
            if importer in ("", "__init__"):
                continue  # the package's face hands on names lazily
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), relative)
            for line, module in imported_modules(tree):
                imported = part_of(module)
                if imported in ("", "__init__") or imported == importer:
                    continue
                if FLOORS[imported] >= FLOORS[importer]:
                    found.append((f"{relative}:{line}", importer, imported))
    return found


def test_every_part_of_common_has_a_floor():
    parts = {name[:-3] if name.endswith(".py") else name for name in os.listdir(COMMON)
             if (name.endswith(".py") and name != "__init__.py") or os.path.isfile(os.path.join(COMMON, name,
                                                                                               "__init__.py"))}
    assert parts == set(FLOORS), f"give each part of common/ a floor in FLOORS: {sorted(parts ^ set(FLOORS))}"


def test_imports_in_common_run_from_the_ground_up():
    problems = upward_imports()
    assert not problems, "Imports that run up or sideways:\n" + "\n".join(
        f"{where}: {importer} imports {imported}" for where, importer, imported in problems)


def test_the_check_finds_an_import_that_runs_up():
    tree = ast.parse("def f():\n    from common.loading.resolve import resolve_model\n")
    assert [part_of(module) for _, module in imported_modules(tree)] == ["loading"]
    assert FLOORS["loading"] > FLOORS["models"]
