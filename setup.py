# setup.py: the build step pyproject.toml cannot express, compiling libexmy
# and exmy_xp.so into the package (python/build_exmy.py); the metadata is in
# pyproject.toml.  The version is configure.ac's.
import os
import sys

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "python"))
import build_exmy  # noqa: E402

setup(**build_exmy.setup_kwargs(here, sdist_prefix=""))
