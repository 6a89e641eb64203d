"""The repository's text describes the package, not how it was developed: no file refers to the
project's issue tracker by number, and the documentation describes measurements, not work
sessions or rounds of work.

References to other projects' issues stay allowed where they cite an external fact: written
``owner/repository issue #N`` or as a link (``github.com/owner/repository/issues/N``).
"""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: "issue 12", "Issue #12", "issues #3 and #4"
ISSUE_NUMBER = re.compile(r"\bissues? ?#?\d+", re.IGNORECASE)
#: another project's issue, cited as a source: "moboehle/B-cos issue #1"
EXTERNAL_ISSUE = re.compile(r"\b[\w.-]+/[\w.-]+ issues? ?#\d+", re.IGNORECASE)
#: a pull request or issue by number alone, "(#12)" or "PR #12"
BARE_NUMBER = re.compile(r"(?:\(#\d+\)|\bPR ?#\d+|\bpull request #\d+)", re.IGNORECASE)
#: words about the development process, in the documentation
PROCESS_WORDS = re.compile(
    r"\b(?:this|that|the same|one|previous|last|earlier|next) (?:session|round of work)s?\b"
    r"|\bsession's\b|\bin this round\b|\bthis round\b|\bthe previous round\b"
    r"|\bdevelopment snapshots?\b",
    re.IGNORECASE)
TEXT_SUFFIXES = {".py", ".md", ".rst", ".txt", ".json", ".toml", ".cfg", ".ini", ".yml",
                 ".yaml", ".html", ".sh", ".ipynb", ".in"}
TEXT_NAMES = {"Makefile", "LICENSE", "MANIFEST.in"}
DOC_SUFFIXES = {".md", ".rst"}


def _tracked_text_files() -> list[Path]:
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                                check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    files = []
    for name in filter(None, listed):
        path = ROOT / name
        if (path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES) and path.is_file() \
                and path != Path(__file__).resolve():  # this file holds the rules' examples
            files.append(path)
    return files


def _lines(path: Path):
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return
    for number, line in enumerate(text.splitlines(), 1):
        yield f"{path.relative_to(ROOT)}:{number}", line


def _issue_references(line: str) -> list[str]:
    external = {m.end() for m in EXTERNAL_ISSUE.finditer(line)}
    found = [m.group(0) for m in ISSUE_NUMBER.finditer(line) if m.end() not in external]
    return found + [m.group(0) for m in BARE_NUMBER.finditer(line)]


def test_no_file_refers_to_the_projects_issues_by_number():
    found = [f"{where}: {refs}" for path in _tracked_text_files()
             for where, line in _lines(path) if (refs := _issue_references(line))]
    assert not found, "say what the code does or why instead:\n" + "\n".join(found)


def test_the_documentation_describes_measurements_not_work_sessions():
    docs = [p for p in _tracked_text_files()
            if p.suffix in DOC_SUFFIXES and p.relative_to(ROOT).parts[0] != "tests"]
    found = [f"{where}: {m.group(0)!r}" for path in docs for where, line in _lines(path)
             for m in PROCESS_WORDS.finditer(line)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(("line", "expected"), [
    ("Saving and loading models (issue 22), with real processes", ["issue 22"]),
    ("the report before Issue #48's methods", ["Issue #48"]),
    ("fixed in (#12)", ["(#12)"]),
    ("as in PR #7", ["PR #7"]),
    ("the initial 1/B scaling (see moboehle/B-cos issue #1)", []),
    ("https://github.com/pytorch/captum/issues/1175", []),
    ("an issue with 3 causes; color #000000, &#39;, the tissue 12", []),
])
def test_the_issue_rule_matches_only_issue_references(line, expected):
    assert _issue_references(line) == expected


@pytest.mark.parametrize(("line", "matches"), [
    ("Ranges over six runs of the final code in one session:", True),
    ("1.10–1.34 in the previous session's runs", True),
    ("No GPU was measured in this round.", True),
    ("medians over interleaved rounds whose order rotates", False),
    ("a Jupyter session, an mlflow run", False),
])
def test_the_process_rule_matches_only_process_words(line, matches):
    assert bool(PROCESS_WORDS.search(line)) is matches
