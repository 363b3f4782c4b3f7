"""Every ``docs/contributing/formats.md §N`` / ``protocol.md §N`` reference in the package and the tests
names a section those pages have (section N.M is the heading with anchor ``#sN-M``)."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = {"formats.md": ROOT / "docs/contributing/formats.md", "protocol.md": ROOT / "docs/contributing/protocol.md"}
# "formats.md §1.5, §1.6, §9.1" or "protocol.md §3.7": every § number that follows the page name
REF = re.compile(r"(formats|protocol)\.md((?:,? ?§\d+(?:\.\d+)?)+)")
SOURCES = ("*.py", "*.pyx", "*.pxd", "*.pxi", "*.h", "*.proto")


def anchors(page: Path) -> set:
    return set(re.findall(r"\{#(s[\d-]+)\}", page.read_text()))


def references():
    for folder in ("fluss_fast", "tests"):
        for pattern in SOURCES:
            for path in (ROOT / folder).rglob(pattern):
                for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                    for m in REF.finditer(line):
                        for number in re.findall(r"§(\d+(?:\.\d+)?)", m.group(2)):
                            yield f"{path.relative_to(ROOT)}:{lineno}", m.group(1) + ".md", number


def test_every_section_reference_resolves():
    have = {name: anchors(page) for name, page in PAGES.items()}
    refs = list(references())
    assert len(refs) > 50, "the references were not found: has their spelling changed?"
    broken = [f"{where}: {page} §{n}" for where, page, n in refs if "s" + n.replace(".", "-") not in have[page]]
    assert not broken, "references to sections the docs do not have:\n  " + "\n  ".join(broken)


def test_the_old_fact_sheets_are_not_cited():
    # DATA.md and RPC.md are not in the repository; docs/contributing/ restates them
    old = [f"{p.relative_to(ROOT)}" for folder in ("fluss_fast", "tests") for pattern in SOURCES
           for p in (ROOT / folder).rglob(pattern)
           if p != Path(__file__).resolve() and re.search(r"\b(DATA|RPC)\.md\b", p.read_text(errors="replace"))]
    assert not old, f"cite docs/contributing/formats.md or protocol.md instead: {old}"
