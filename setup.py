"""Builds what setup.cfg cannot say: the bind guard, the import hook's .pth
file, and the bundled model_fns and input_fns inside the package.

The bind guard (estimator_rt/cluster/_bind_guard.c) is a small C library
that `run_server` preloads so that a TensorFlow server listens on the
address its cluster gives it and nothing wider; see
estimator_rt/cluster/bind_guard.py. It is built on Linux only, and optionally: if no C compiler is found the install
still succeeds, and run_server then asks for --bind_host=0.0.0.0 to listen
on every interface knowingly.

`estimator_rt_compat.pth` goes to the top of site-packages, where Python
runs it at start: it serves tf.estimator in every process of the
environment (estimator_rt/compat/startup.py). A wheel gets it from the
build directory; an editable install (`pip install -e .`) writes it into
the editable wheel itself, whose top is site-packages too.

`model_fns/` and `input_fns/` stay at the checkout's top level, where the
binary's `--model_fn=model_fns.mlp:model_fn` finds them from a checkout; the
wheel installs them as `estimator_rt.model_fns` and `estimator_rt.input_fns`
(the binary's fallback, estimator_rt/core/user_fns.py), so that it installs
no top-level package but `estimator_rt`, and a user's own `model_fns` wins.
"""

import os
import sys

from setuptools import Extension
from setuptools import find_packages
from setuptools import setup
from setuptools.command.build_py import build_py

PTH_FILE = 'estimator_rt_compat.pth'
BUNDLED = {'estimator_rt.model_fns': 'model_fns',
           'estimator_rt.input_fns': 'input_fns'}

_EXTENSIONS = []
if sys.platform.startswith('linux'):
  _EXTENSIONS.append(Extension(
      'estimator_rt.cluster._bind_guard',
      sources=['estimator_rt/cluster/_bind_guard.c'],
      libraries=['dl'], optional=True))


class BuildPyWithPth(build_py):
  """build_py, and the .pth file at the top of what is installed."""

  def run(self):
    super().run()
    if getattr(self, 'editable_mode', False):
      # setuptools' editable wheel: `install` writes straight into the
      # unpacked wheel, whose top is site-packages once installed.
      top = self.get_finalized_command('install').install_lib
    else:
      top = self.build_lib
    self.copy_file(PTH_FILE, os.path.join(top, PTH_FILE), preserve_mode=False)

  def get_outputs(self, *args, **kwargs):
    outputs = super().get_outputs(*args, **kwargs)
    if getattr(self, 'editable_mode', False):
      return outputs
    return outputs + [os.path.join(self.build_lib, PTH_FILE)]


setup(
    packages=find_packages(include=['estimator_rt', 'estimator_rt.*']) +
    sorted(BUNDLED),
    package_dir=dict(BUNDLED),
    cmdclass={'build_py': BuildPyWithPth},
    ext_modules=_EXTENSIONS)
