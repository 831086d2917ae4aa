"""Sphinx configuration of the rtframework guide (``tox -e docs``)."""

import rtframework

project = "rtframework"
copyright = "rtframework contributors; Apache License 2.0"
version = release = rtframework.__version__

extensions = [
    "sphinx.ext.autodoc",
    "oslo_config.sphinxext",
    "oslo_config.sphinxconfiggen",
    "cliff.sphinxext",
    "myst_parser",
]

# The sample configuration, generated from the options at each build into
# _static/ (not committed), the same way `tox -e genconfig` writes
# etc/rtframework/rtframework.conf.sample.
config_generator_config_file = "../../etc/rtframework/rtframework-config-generator.conf"
sample_config_basename = "_static/rtframework"

autoprogram_cliff_application = "rtf"
# cliff's output options, the same on every list and show command, are
# described once on the CLI page instead of under each command.
autoprogram_cliff_ignored = [
    "--help", "--format", "--column", "--noindent", "--prefix", "--max-width",
    "--fit-width", "--print-empty", "--sort-column", "--sort-ascending",
    "--sort-descending", "--quote",
]
autodoc_member_order = "bysource"
autodoc_typehints = "description"

html_theme = "alabaster"
html_static_path = ["_static"]
html_theme_options = {"description": "Resource tracking that stays right while VMs move"}
exclude_patterns = ["_build"]
