"""Exit 1 naming what is missing when an extra of the installed formulary-rag is not satisfied.

    .venv/bin/python scripts/check_extra.py test      # run by scripts/bootstrap.sh after the install

`pip install --no-deps` (the set-up installs the exact set of requirements.lock that way) never checks an
extra, and `pip check` only checks what a package needs without extras: this checks every requirement of
the extra (and of the extras it names, e.g. test -> all -> cohere, ...) against what is installed.
"""

from __future__ import annotations

import sys
from importlib import metadata

from packaging.requirements import Requirement

PACKAGE = "formulary-rag"


def missing(extra: str, seen: set[str] | None = None) -> list[str]:
    seen = seen if seen is not None else set()
    if extra in seen:
        return []
    seen.add(extra)
    out: list[str] = []
    for line in metadata.requires(PACKAGE) or []:
        requirement = Requirement(line)
        if requirement.marker is None or not requirement.marker.evaluate({"extra": extra}):
            continue
        if requirement.name == PACKAGE:
            for inner in sorted(requirement.extras):
                out += missing(inner, seen)
            continue
        try:
            version = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            out.append(f"{requirement} (not installed)")
            continue
        if not requirement.specifier.contains(version, prereleases=True):
            out.append(f"{requirement} (installed: {version})")
    return out


def main(argv: list[str]) -> int:
    extras = argv or ["test"]
    problems = [p for extra in extras for p in missing(extra)]
    for problem in problems:
        print(f"[check_extra] {PACKAGE}[{','.join(extras)}] needs {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
