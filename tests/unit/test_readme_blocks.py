"""The README runner: which blocks it runs, and what makes it fail."""

from __future__ import annotations

import io

from tests import readme_blocks

README = """# x

```sh
export GREETING=hello
```

```ini
[DEFAULT]
```

```sh
# long: ten minutes (measured)
sleep 600
```

```bash
test "$GREETING" = hello && echo "$GREETING" > seen
```
"""


def test_blocks_are_the_shell_ones_in_order_with_long_ones_marked():
    blocks = readme_blocks.shell_blocks(README)
    assert [b.line for b in blocks] == [3, 11, 16]
    assert [b.skip_reason for b in blocks] == [None, "ten minutes (measured)", None]


def test_blocks_share_one_shell_and_long_ones_are_skipped(tmp_path):
    (tmp_path / "README.md").write_text(README)
    out = io.StringIO()
    assert readme_blocks.run(tmp_path / "README.md", out) == 0
    assert (tmp_path / "seen").read_text() == "hello\n"
    assert "skipped block at README.md:11 (long: ten minutes (measured))" in out.getvalue()


def test_a_failing_command_names_its_block(tmp_path):
    (tmp_path / "README.md").write_text("```sh\ntrue\n```\n\n```sh\nfalse\necho after\n```\n")
    out = io.StringIO()
    assert readme_blocks.run(tmp_path / "README.md", out) == 1
    assert "FAILED: the block at README.md:5 (exit status 1)" in out.getvalue()
    assert "after" not in out.getvalue()


def test_a_traceback_fails_even_with_exit_status_0(tmp_path):
    (tmp_path / "README.md").write_text(
        "```sh\npython3 -c 'import traceback; traceback.print_stack()' 2>&1 | "
        "sed 's/^  File.*//'; echo 'Traceback (most recent call last):' >&2\n```\n")
    out = io.StringIO()
    assert readme_blocks.run(tmp_path / "README.md", out) == 1
    assert "FAILED: a traceback in the output" in out.getvalue()


GUIDE_PAGE = """Title
=====

.. code-block:: ini

   [DEFAULT]

.. code-block:: sh
   :caption: two commands

   export GREETING=hello
   if true; then
       echo "$GREETING" > seen
   fi

.. code-block:: console

   $ rtf check
   no findings

::

   rtf demo

.. code-block:: bash

   # long: an hour (measured)
   sleep 3600

Some text.
"""


def test_guide_blocks_are_the_shell_code_blocks_without_their_options():
    blocks = readme_blocks.rst_shell_blocks(GUIDE_PAGE)
    assert [b.line for b in blocks] == [8, 25]
    assert blocks[0].text == ('export GREETING=hello\nif true; then\n'
                              '    echo "$GREETING" > seen\nfi\n')
    assert blocks[1].skip_reason == "an hour (measured)"


def test_a_folder_runs_each_page_from_the_checkout_top(tmp_path):
    (tmp_path / "setup.cfg").write_text("")
    (tmp_path / "doc" / "user").mkdir(parents=True)
    (tmp_path / "doc" / "user" / "a.rst").write_text(GUIDE_PAGE)
    (tmp_path / "doc" / "user" / "b.rst").write_text(
        "B\n=\n\n.. code-block:: sh\n\n   test ! -e elsewhere\n   false\n")
    assert readme_blocks.main([str(tmp_path / "doc")]) == 1
    assert (tmp_path / "seen").read_text() == "hello\n"  # a.rst ran first, at the top


def test_a_failing_guide_block_is_named_by_its_path(tmp_path, capsys):
    (tmp_path / "setup.cfg").write_text("")
    (tmp_path / "doc").mkdir()
    (tmp_path / "doc" / "b.rst").write_text("B\n=\n\n.. code-block:: sh\n\n   false\n")
    assert readme_blocks.main([str(tmp_path / "doc")]) == 1
    assert "FAILED: the block at doc/b.rst:4 (exit status 1)" in capsys.readouterr().out
