"""Generated documentation stays current: the API reference and the pass
reference are regenerated from the code and compared with the committed pages
(what `make docs` writes)."""

from ember.passes.reference import pass_reference
from ember.tools import docs


def test_the_generated_pages_are_current(capsys):
    assert docs.main(["--check"]) == 0, capsys.readouterr().err


def test_the_pass_reference_covers_every_ember_pass():
    from ember.passes import _EMBER_PASSES

    page = pass_reference()
    for name in _EMBER_PASSES:
        assert f"## `{name}`" in page, name
        assert f"tests/lit/passes/{name}.mlir" in page, name


def test_the_api_reference_covers_the_public_names():
    page = docs.api_reference()
    for name in ("ember.build", "ember.compile_model", "ember.te.compute"):
        assert f"### `{name}(" in page, name
    assert "### class `ember.runtime.GraphModule(" in page


def test_a_public_name_without_a_docstring_is_an_error(monkeypatch):
    import ember.topi

    def undocumented():
        pass

    monkeypatch.setattr(ember.topi, "undocumented", undocumented, raising=False)
    monkeypatch.setattr(ember.topi, "__all__", [*ember.topi.__all__, "undocumented"])
    try:
        docs.api_reference()
    except ValueError as e:
        assert "ember.topi.undocumented" in str(e)
    else:
        raise AssertionError("expected the undocumented name to be an error")


def test_every_environment_variable_read_is_documented():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    table = (root / "docs" / "environment.md").read_text()
    read = set()
    pattern = re.compile(
        r'(?:environ(?:\.get)?\(?\[?\s*|getenv\(\s*|_ENV = )"([A-Z][A-Z0-9_]+)"'
    )
    for folder in ("ember", "passes", "backends", "runtime", "tools", "frontends"):
        for path in (root / folder).rglob("*.py"):
            read |= set(pattern.findall(path.read_text()))
    assert read >= {"EMBER_NUM_THREADS", "EMBER_CACHE_DIR"}  # the scan works
    missing = sorted(name for name in read if f"`{name}`" not in table)
    assert not missing, f"docs/environment.md lacks {missing}"


def test_the_readme_links_every_guide():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    for page in sorted((root / "docs").glob("*.md")):
        assert f"docs/{page.name}" in readme, page.name
    assert "## Limits" in readme
