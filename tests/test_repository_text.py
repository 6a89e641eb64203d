"""The repository's text describes the package, not how it was developed: no file refers to
the project's own tracker entries by number, and the documentation describes measurements,
not how the work was organised in time.

Another project's tracker entry stays allowed where it cites an external fact: written
``owner/repository`` + the entry's number, or as a link to it. The example lines of the
rule's own tests are assembled from parts (:func:`_line`), so this file holds none of what it
forbids.
"""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: a tracker entry by number ("issue", optional "#", digits; see the tests below)
ISSUE_NUMBER = re.compile(r"\bissues? ?#?\d+", re.IGNORECASE)
#: another project's entry, cited as a source: owner/repository before it
EXTERNAL_ISSUE = re.compile(r"\b[\w.-]+/[\w.-]+ issues? ?#\d+", re.IGNORECASE)
#: a pull request or entry by number alone: "#" and digits in parentheses, or after "PR"
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


def _line(template: str) -> str:
    """An example line: ``{I}`` stands for the word "issue", ``{S}`` for "session", ``{R}``
    for "round" (assembled, so that this file holds no such reference itself)."""
    return template.format(I="iss" + "ue", S="sess" + "ion", R="rou" + "nd")


@pytest.mark.parametrize(("template", "expected"), [
    ("Saving and loading models ({I} 22), with real processes", ["{I} 22"]),
    ("the report before {I} #48's methods", ["{I} #48"]),
    ("fixed in (#12)", ["(#12)"]),
    ("as in PR #7", ["PR #7"]),
    ("the initial 1/B scaling (see owner/repository {I} #1)", []),
    ("https://github.com/owner/repository/{I}s/1175", []),
    ("an {I} with 3 causes; color #000000, &#39;, the t{I} 12", []),
])
def test_the_issue_rule_matches_only_issue_references(template, expected):
    assert _issue_references(_line(template)) == [_line(e) for e in expected]


@pytest.mark.parametrize(("template", "matches"), [
    ("Ranges over six runs of the final code in one {S}:", True),
    ("1.10–1.34 in the previous {S}'s runs", True),
    ("No GPU was measured in this {R}.", True),
    ("medians over interleaved {R}s whose order rotates", False),
    ("a Jupyter {S}, an mlflow run", False),
])
def test_the_process_rule_matches_only_process_words(template, matches):
    assert bool(PROCESS_WORDS.search(_line(template))) is matches
