import setuptools

# The one place the package list is written. setup.cfg maps the import name
# rtframework_drivers to the drivers/ folder (package_dir), but "find:"
# looks for folder names and would never find the drivers, so they are
# listed here under their import name.
setuptools.setup(
    packages=setuptools.find_packages(include=["rtframework", "rtframework.*"])
    + ["rtframework_drivers"]
    + ["rtframework_drivers." + name for name in setuptools.find_packages("drivers")],
)
