# setup.py for `pip install ./python`: the C tree is `..` in a checkout,
# csrc/ in this directory's sdist (python/build_exmy.py).
import os
import sys

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import build_exmy  # noqa: E402

setup(**build_exmy.setup_kwargs(here, sdist_prefix="csrc"))
