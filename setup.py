import setuptools

# setup.cfg maps the import name rtframework_drivers to the drivers/ folder,
# but "packages = find:" looks for folder names, so it never finds the
# drivers; list them under their import name here (setup() arguments win
# over setup.cfg).
setuptools.setup(
    packages=setuptools.find_packages(include=["rtframework", "rtframework.*"])
    + ["rtframework_drivers"]
    + ["rtframework_drivers." + name for name in setuptools.find_packages("drivers")],
)
