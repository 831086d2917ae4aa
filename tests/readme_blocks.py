"""Run every shell block of the README and the guide as a new user would.

    python tests/readme_blocks.py [README.md] [doc/source ...]

Each file named (a folder stands for every ``.rst`` file under it, in
name order) runs in a bash process of its own, one after the other, from
the checkout's top (the nearest folder holding ``setup.cfg``; else the
file's own), without ``RTF_`` variables. Within a file the blocks run in
order in that one process (``set -e``), so an ``export`` or a variable
set in one block is seen by the next. The blocks are those fenced as
``sh``/``bash``/``shell`` in Markdown, and ``.. code-block::`` (or
``.. code::``) ``sh``/``bash``/``shell`` in reStructuredText; ``console``
blocks and plain literal blocks show output and are not run. A block
whose first line is ``# long: ...`` is skipped and its reason printed
(the text states its measured time there). The run fails on any
non-zero exit status and on any Python traceback in the output, naming
the block and its line.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

SHELLS = {"sh", "bash", "shell"}
FENCE = re.compile(r"^```(\w*)\s*$")
DIRECTIVE = re.compile(r"^(\s*)\.\. code(?:-block)?::\s*(\w*)\s*$")
TRACEBACK = "Traceback (most recent call last)"
MARK = "::readme-block "


@dataclasses.dataclass(frozen=True)
class Block:
    line: int  # of the opening fence, 1-based
    text: str

    @property
    def skip_reason(self) -> str | None:
        first = self.text.lstrip().splitlines()[0] if self.text.strip() else ""
        return first[len("# long:"):].strip() if first.startswith("# long:") else None


def shell_blocks(markdown: str) -> list[Block]:
    """The shell blocks of a Markdown text, in order."""
    blocks, lines, start, language = [], [], None, None
    for number, line in enumerate(markdown.splitlines(), 1):
        match = FENCE.match(line)
        if start is None and match:
            start, language, lines = number, match.group(1), []
        elif start is not None and line.strip() == "```":
            if language in SHELLS:
                blocks.append(Block(start, "\n".join(lines) + "\n"))
            start = None
        elif start is not None:
            lines.append(line)
    return blocks


def _indentation(line: str) -> int:
    return len(line) - len(line.lstrip())


def rst_shell_blocks(text: str) -> list[Block]:
    """The shell ``code-block`` directives of a reStructuredText text, in order."""
    blocks, lines = [], text.splitlines()
    for number, line in enumerate(lines, 1):
        match = DIRECTIVE.match(line)
        if not match or match.group(2) not in SHELLS:
            continue
        indent, body = len(match.group(1)), []
        for following in lines[number:]:
            if following.strip() and _indentation(following) <= indent:
                break
            body.append(following)
        while body and body[0].strip().startswith(":"):  # the directive's options
            body.pop(0)
        width = min((_indentation(b) for b in body if b.strip()), default=0)
        blocks.append(Block(number, "\n".join(b[width:] for b in body).strip("\n") + "\n"))
    return blocks


def blocks_of(path: pathlib.Path) -> list[Block]:
    text = path.read_text()
    return rst_shell_blocks(text) if path.suffix == ".rst" else shell_blocks(text)


def checkout_top(path: pathlib.Path) -> pathlib.Path:
    return next((p for p in path.parents if (p / "setup.cfg").exists()), path.parent)


def script(blocks: list[Block]) -> str:
    parts = ["set -eo pipefail"]
    for index, block in enumerate(blocks):
        parts.append(f"echo '{MARK}{index}' >&2")
        parts.append(block.text)
    parts.append(f"echo '{MARK}end' >&2")
    return "\n".join(parts) + "\n"


def run(readme: pathlib.Path, out=None) -> int:
    """Run the runnable blocks; 0 when every one passed."""
    out = out or sys.stdout
    blocks = blocks_of(readme)
    top = checkout_top(readme)
    label = readme.relative_to(top)
    runnable = []
    for block in blocks:
        if block.skip_reason is not None:
            out.write(f"skipped block at {label}:{block.line} (long: "
                      f"{block.skip_reason})\n")
        else:
            runnable.append(block)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RTF_")}
    started = time.monotonic()
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
        f.write(script(runnable))
    try:
        done = subprocess.run(["bash", f.name], cwd=top, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    marks = [line[len(MARK):] for line in done.stderr.splitlines() if line.startswith(MARK)]
    last = marks[-1] if marks else "0"
    failed = done.returncode != 0 or TRACEBACK in done.stdout or TRACEBACK in done.stderr
    out.write(done.stdout)
    out.write("".join(line + "\n" for line in done.stderr.splitlines()
                      if not line.startswith(MARK)))
    if not failed:
        out.write(f"{len(runnable)} blocks of {label} passed "
                  f"({len(blocks) - len(runnable)} long ones skipped) in "
                  f"{time.monotonic() - started:.0f} s\n")
        return 0
    if last == "end":  # every block ran, but something printed a traceback
        where = "a traceback in the output"
    else:
        block = runnable[int(last)]
        where = f"the block at {label}:{block.line} (exit status {done.returncode})"
    out.write(f"FAILED: {where}\n")
    return 1


def files(arguments: list[str]) -> list[pathlib.Path]:
    """The files named, each folder replaced by its .rst files in name order."""
    found = []
    for argument in arguments or ["README.md"]:
        path = pathlib.Path(argument).resolve()
        found.extend(sorted(path.rglob("*.rst")) if path.is_dir() else [path])
    return found


def main(arguments: list[str]) -> int:
    """Run every file's blocks; stop at the first file that fails."""
    for path in files(arguments):
        if blocks_of(path) and run(path) != 0:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
