"""Generated documentation stays current: the pass reference is regenerated
from the passes and compared with the committed page."""

from pathlib import Path

from ember.passes.reference import pass_reference

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_pass_reference_is_current():
    page = (DOCS / "passes.md").read_text()
    assert page == pass_reference(), (
        "docs/passes.md is stale: run "
        "`.venv/bin/python -m ember.passes.reference > docs/passes.md`"
    )


def test_the_pass_reference_covers_every_ember_pass():
    from ember.passes import _EMBER_PASSES

    page = pass_reference()
    for name in _EMBER_PASSES:
        assert f"## `{name}`" in page, name
        assert f"tests/lit/passes/{name}.mlir" in page, name
