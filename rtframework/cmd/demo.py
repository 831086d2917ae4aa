"""``rtf demo``: a small cloud of fake hosts, run and narrated."""

from __future__ import annotations

import os
import shutil
import tempfile

from cliff.command import Command

from rtframework import demo


class Demo(Command):
    """Run three fake hosts on embedded SQLite: boot, heal and every kind of move."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            "--state-path", metavar="DIR",
            help="Keep the demo's databases here, to look around after (default: a "
            "temporary directory, removed at the end).")
        return parser

    def take_action(self, parsed_args):
        keep = parsed_args.state_path is not None
        state_path = parsed_args.state_path or tempfile.mkdtemp(prefix="rtf-demo-")
        out = self.app.stdout
        try:
            conf = self.app.conf
            demo.configure(conf, state_path)
            out.write(f"rtframework demo in {state_path}\n")
            demo.run(conf, lambda line: out.write(line + "\n"))
        finally:
            if not keep:
                shutil.rmtree(state_path, ignore_errors=True)
        if keep:
            # A config file pointing at the demo's databases, to look around.
            config_file = os.path.join(state_path, "demo.conf")
            with open(config_file, "w") as f:
                f.write(f"[DEFAULT]\nstate_path = {state_path}\nhost = {demo.HOSTS[0]}\n")
            out.write(f"\nlook around: rtf --config-file {config_file} instances list\n")
        else:
            out.write(f"\n{state_path} removed; rtf demo --state-path DIR keeps the "
                      "databases to look around after\n")
        return 0
