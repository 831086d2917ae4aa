"""The check that every raise of an rtframework error class is reached by a
test or listed with its reason in tests/README.md."""

from __future__ import annotations

from tests.tools import unreached_raises as ur

README = f"""# tests

{ur.SECTION}

| file | error classes | why no py3 test reaches it |
|---|---|---|
| `rtframework/db.py` | ConfigError, SchemaError | a database that cannot be reached |
| `rtframework/retry.py` | RetriesExhausted | |

## Next section

| `rtframework/conf/__init__.py` | ConfigError | outside the section |
"""


def test_the_table_is_read_by_file_with_classes_and_reason():
    rows = ur.listed(README)
    assert rows == {
        "rtframework/db.py": ({"ConfigError", "SchemaError"}, "a database that cannot be reached"),
        "rtframework/retry.py": ({"RetriesExhausted"}, ""),
    }


def test_an_unreached_raise_needs_its_file_its_class_and_a_reason():
    found = [("rtframework/db.py", 10, "ConfigError"),  # listed
             ("rtframework/db.py", 20, "DatabaseError"),  # class not listed
             ("rtframework/retry.py", 30, "RetriesExhausted"),  # no reason
             ("rtframework/conf/__init__.py", 40, "ConfigError")]  # not in the section
    assert ur.unlisted(found, ur.listed(README)) == found[1:]


def test_raises_of_our_error_classes_are_found_and_others_are_not():
    found = ur.raises([ur.ROOT / "rtframework" / "provider_tree.py"])
    assert {name for _, _, name in found} == {"ProviderTreeError"}
    assert len(found) == 5
    classes = ur.error_classes(ur._sources())
    assert {"ProviderTreeError", "InvalidRequest", "MoveError", "DriverError"} <= classes
    assert "ValueError" not in classes and "ProviderTree" not in classes


def test_every_file_the_readme_lists_exists_and_raises_what_it_names():
    rows = ur.listed(ur.README.read_text())
    assert rows, f"no table under {ur.SECTION!r} in tests/README.md"
    raised = {(path, name) for path, _, name in ur.raises()}
    for path, (classes, why) in rows.items():
        assert (ur.ROOT / path).is_file(), path
        assert why, f"{path}: no reason given"
        for name in classes:
            assert (path, name) in raised, f"{path} raises no {name} any more"


def test_check_of_a_partial_run_is_skipped(monkeypatch, capsys):
    monkeypatch.setattr(ur, "unreached", lambda data: [("rtframework/x.py", 1, "MoveError")])
    # What the envs gave pytest comes after "--" and is never parsed as
    # options of this tool.
    for pytest_args in (["tests/unit/test_conf.py"], ["-k", "conf", "tests"],
                        ["-x", "--lf", "tests"]):
        assert ur.main(["--check", "--", *pytest_args]) == 0
        assert "not checked" in capsys.readouterr().out
    assert ur.main(["--check", "--", "tests"]) == 1
    assert "NOT LISTED: rtframework/x.py:1: MoveError" in capsys.readouterr().err
    assert ur.main(["--check"]) == 1
    assert "NOT LISTED: rtframework/x.py:1: MoveError" in capsys.readouterr().err
    assert ur.main([]) == 0
    assert "1 raise statement(s)" in capsys.readouterr().out
