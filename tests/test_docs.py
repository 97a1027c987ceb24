"""Docs that are generated from code stay true to it."""

from tools.configdoc import OUT, render


def test_configuration_doc_matches_the_settings_classes():
    assert OUT.read_text() == render(), "settings changed: run `make docs` and commit docs/configuration.md"


def test_readme_opens_with_make_run_then_make_test():
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    commands = [line.split("#")[0].strip() for line in readme.splitlines() if line.startswith("make ")]
    assert commands[:2] == ["make run", "make test"]
