"""Run every shell block of a README as a new user would, in one shell.

    python tests/readme_blocks.py [README.md]

Blocks fenced as ``sh``/``bash``/``shell`` run in order in one bash
process (``set -e``, from the README's directory, without
``RTF_CONFIG_FILE``), so an ``export`` or a variable set in one block is
seen by the next. A block whose first line is ``# long: ...`` is skipped
and its reason printed (the README states its measured time there). The
run fails on any non-zero exit status and on any Python traceback in the
output, naming the block and its line in the README.
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
    """The README's shell blocks, in order."""
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


def script(blocks: list[Block]) -> str:
    parts = ["set -eo pipefail"]
    for index, block in enumerate(blocks):
        parts.append(f"echo '{MARK}{index}' >&2")
        parts.append(block.text)
    parts.append(f"echo '{MARK}end' >&2")
    return "\n".join(parts) + "\n"


def run(readme: pathlib.Path, out=sys.stdout) -> int:
    """Run the runnable blocks; 0 when every one passed."""
    blocks = shell_blocks(readme.read_text())
    runnable = []
    for block in blocks:
        if block.skip_reason is not None:
            out.write(f"skipped block at {readme.name}:{block.line} (long: "
                      f"{block.skip_reason})\n")
        else:
            runnable.append(block)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RTF_")}
    started = time.monotonic()
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
        f.write(script(runnable))
    try:
        done = subprocess.run(["bash", f.name], cwd=readme.parent, env=env,
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
        out.write(f"{len(runnable)} blocks of {readme.name} passed "
                  f"({len(blocks) - len(runnable)} long ones skipped) in "
                  f"{time.monotonic() - started:.0f} s\n")
        return 0
    if last == "end":  # every block ran, but something printed a traceback
        where = "a traceback in the output"
    else:
        block = runnable[int(last)]
        where = f"the block at {readme.name}:{block.line} (exit status {done.returncode})"
    out.write(f"FAILED: {where}\n")
    return 1


if __name__ == "__main__":
    path = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "README.md").resolve()
    sys.exit(run(path))
