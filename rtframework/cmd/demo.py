"""``rtf demo``: a small cloud of fake hosts, run and narrated."""

from __future__ import annotations

import os
import tempfile

from cliff.command import Command

from rtframework import demo


class Demo(Command):
    """Run three fake hosts on embedded SQLite: boot, heal and every kind of move."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            "--state-path", metavar="DIR",
            help="Keep the demo's databases here (default: a new temporary directory).")
        return parser

    def take_action(self, parsed_args):
        state_path = parsed_args.state_path or tempfile.mkdtemp(prefix="rtf-demo-")
        conf = self.app.conf
        demo.configure(conf, state_path)
        # A config file pointing at the demo's databases, to look around after.
        config_file = os.path.join(state_path, "demo.conf")
        with open(config_file, "w") as f:
            f.write(f"[DEFAULT]\nstate_path = {state_path}\nhost = {demo.HOSTS[0]}\n")
        out = self.app.stdout
        out.write(f"rtframework demo in {state_path}\n")
        demo.run(conf, lambda line: out.write(line + "\n"))
        out.write(f"\nlook around: rtf --config-file {config_file} instances list\n")
        return 0
