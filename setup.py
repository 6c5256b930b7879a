"""Builds the bind guard, the one compiled part of estimator_rt.

Everything else is in setup.cfg. The bind guard (estimator_rt/_bind_guard.c)
is a small C library that `run_server` preloads so that a TensorFlow server
listens on the address its cluster gives it and nothing wider; see
estimator_rt/bind_guard.py. It is built on Linux only, and optionally: if
no C compiler is found the install still succeeds, and run_server then asks
for --bind_host=0.0.0.0 to listen on every interface knowingly.
"""

import sys

from setuptools import Extension
from setuptools import setup

_EXTENSIONS = []
if sys.platform.startswith('linux'):
  _EXTENSIONS.append(Extension(
      'estimator_rt._bind_guard', sources=['estimator_rt/_bind_guard.c'],
      libraries=['dl'], optional=True))

setup(ext_modules=_EXTENSIONS)
