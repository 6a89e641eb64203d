"""The command line: help for every subcommand, --version, unknown names exit with code 2."""

import subprocess
import sys

import pytest

import interpretable
from interpretable.__main__ import build_parser, main


def test_version():
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0


def test_every_reproduction_has_help_with_quick_and_its_own_options(capsys):
    parser, demos, papers = build_parser()
    assert {"bcos-vit", "diversity-lstm", "isan", "seat"} <= set(papers)
    for name in papers:
        with pytest.raises(SystemExit) as exit_:
            main(["reproduce", name, "--help"])
        assert exit_.value.code == 0
        assert "--quick" in capsys.readouterr().out, name
    with pytest.raises(SystemExit):
        main(["reproduce", "seat", "--help"])
    assert "--encoder" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["reproduce", "nope"], ["demo", "--only", "nonexistent"],
                                  ["reproduce", "seat", "--no-such-option"], ["frobnicate"],
                                  []])
def test_unknown_names_and_options_exit_with_code_2(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert "error" in capsys.readouterr().err


def test_module_entry_point_prints_the_version():
    out = subprocess.run([sys.executable, "-m", "interpretable", "--version"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and interpretable.__version__ in out.stdout


def test_reproductions_write_where_told_and_never_into_the_working_directory(
        tmp_path, monkeypatch):
    from interpretable import reproduce

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert reproduce.default_results_dir() == tmp_path / "data" / "interpretable" / "results"
    assert reproduce.write_results("isan", {"x": 1.0}) == \
        tmp_path / "data" / "interpretable" / "results" / "isan.json"
    assert reproduce.write_results("isan", {"x": 1.0}, tmp_path / "mine").parent == \
        tmp_path / "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "mine"]
