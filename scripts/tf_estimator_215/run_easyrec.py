r"""Runs EasyRec's estimator path (train_and_evaluate), here and on 2.15.

    # A checkout of github.com/alibaba/EasyRec (its Python tree; the LFS test
    # data and the prebuilt ops are not needed).
    .venv/bin/python scripts/tf_estimator_215/run_easyrec.py --source TREE
    .venv/bin/python scripts/tf_estimator_215/run_easyrec.py --source TREE --215

EasyRec ships no wheel for TensorFlow 2 and its tests read data kept in Git
LFS; its train_eval_test.py runs each sample config as
`python -m easy_rec.python.train_eval` after test_utils.test_single_train_eval
rewrites it (50 steps, a fresh model_dir, no distribution). This does the
same for CONFIGS, unchanged otherwise: it copies TREE's `easy_rec` package
into a scratch directory, compiles its protos with the target environment's
protoc (grpcio-tools), writes a generated stand-in for the Avazu CSV the
configs read (the real one is in LFS), makes each pipeline config with
EasyRec's own `test_utils._load_config_for_test` and the settings
test_single_train_eval adds, and runs train_eval in a fresh process
(through `python -m estimator_rt.compat` here). EasyRec targets TensorFlow
<= 2.12: the processes get library_harness/ with LIBRARY_HARNESS_TF_NAMES=1
on both sides (the TensorFlow 2.13 renames its code reads).

Per config it records the exit code (and the error's last line), the
checkpoints' steps, the final evaluation's metrics (read from the eval
event files) and the exports, to tests/data/tf_estimator_215/easyrec.json
(--215) or scripts/tf_estimator_215/own_tests/easyrec_estimator_rt.json.
"""

import argparse
import csv
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

import numpy as np

import library_programs as programs

# Sample configs of EasyRec's train_eval_test.py that read the Avazu CSV.
CONFIGS = ('wide_and_deep_on_avazau_ctr', 'deepfm_combo_on_avazu_ctr',
           'wide_and_deep_backbone_on_avazau')
AVAZU_CSV = os.path.join('data', 'test', 'dwd_avazu_ctr_deepmodel_10w.csv')
AVAZU_ROWS = 4096
TOTAL_STEPS = 50  # test_single_train_eval's default

# What test_utils.test_single_train_eval does before it runs train_eval.
MAKE_CONFIG = '''
import sys
from easy_rec.python.utils import config_util, test_utils
source, test_dir, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
config = test_utils._load_config_for_test(source, test_dir, steps)
config.train_config.train_distribute = 0
config.train_config.num_gpus_per_worker = 1
config.train_config.sync_replicas = False
config_util.save_pipeline_config(config, test_dir)
'''


def write_avazu_csv(path: str, rows: int = AVAZU_ROWS, seed: int = 0) -> None:
  """The Avazu CTR columns the configs declare (label, hour, c1, banner_pos,
  16 hashed string ids, c19-c21), with a label that depends on some of
  them."""
  rng = np.random.RandomState(seed)
  sizes = (500, 300, 20, 500, 100, 30, 2000, 2000, 300, 5, 5, 400, 20, 50,
           300, 4)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, 'w', newline='') as f:
    writer = csv.writer(f)
    for _ in range(rows):
      hour, c1, banner_pos = (rng.randint(0, 24), rng.randint(1000, 1016),
                              rng.randint(0, 7))
      ids = [rng.randint(0, size) for size in sizes]
      c19, c20, c21 = rng.randint(0, 200), rng.randint(0, 1500), rng.randint(
          0, 26)
      z = 0.1 * (hour - 12) + 0.5 * (banner_pos > 2) + (ids[0] % 7 == 0) - 1
      label = int(rng.rand() < 1 / (1 + np.exp(-z)))
      writer.writerow([label, hour, c1, banner_pos] +
                      ['%x' % i for i in ids] + [c19, c20, c21])


def prepare(source: str, python: str, work: str) -> str:
  """Copies TREE's easy_rec into work/src and compiles its protos there;
  returns work/src."""
  src = os.path.join(work, 'src')
  shutil.copytree(os.path.join(source, 'easy_rec'),
                  os.path.join(src, 'easy_rec'),
                  ignore=shutil.ignore_patterns('*.so', '*.so.*', 'test_data'))
  protos = sorted(glob.glob(os.path.join(src, 'easy_rec', 'python', 'protos',
                                         '*.proto')))
  subprocess.run([python, '-m', 'grpc_tools.protoc', f'-I{src}',
                  f'--python_out={src}'] + protos, check=True,
                 capture_output=True, timeout=300)
  write_avazu_csv(os.path.join(work, AVAZU_CSV))
  return src


def run_config(name: str, source: str, python: str, reference: bool,
               work: str, src: str, timeout: float) -> Dict[str, object]:
  """Makes config `name` as test_single_train_eval does, runs train_eval."""
  test_dir = os.path.join(work, name)
  os.makedirs(test_dir)
  runner = programs.runner(python, reference)
  env = programs.environment(reference, [src], LIBRARY_HARNESS_TF_NAMES='1')
  maker = os.path.join(work, 'make_config.py')
  with open(maker, 'w') as f:
    f.write(MAKE_CONFIG)
  log = os.path.join(test_dir, 'make_config.log')
  code = programs.run(runner + [maker, os.path.join(source, 'samples', 'model_config',
                                              name + '.config'), test_dir,
                        str(TOTAL_STEPS)], env, work, log, 600)
  if code != 0:
    return {'exit': code,
            'error': 'making the config: ' + programs.last_error(log)}
  log = os.path.join(test_dir, 'train_eval.log')
  start = time.monotonic()
  code = programs.run(runner + ['-m', 'easy_rec.python.train_eval',
                        '--pipeline_config_path',
                        os.path.join(test_dir, 'pipeline.config')],
              env, work, log, timeout)
  model_dir = os.path.join(test_dir, 'train')
  result = {'exit': code, 'seconds': round(time.monotonic() - start, 1),
            'checkpoint_steps': programs.checkpoint_steps(model_dir),
            'final_eval': programs.final_eval(model_dir),
            'exports': programs.exports(model_dir)}
  if code != 0:
    result['error'] = programs.last_error(log)
  return result


def main(argv: List[str]) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--source', required=True, help='EasyRec checkout')
  parser.add_argument('--215', dest='reference', action='store_true',
                      help='run on tf.estimator 2.15 (the reference)')
  parser.add_argument('--python', help='interpreter (default: '
                      '.venv-libraries, or .venv-tf215-libraries with --215)')
  parser.add_argument('--configs', nargs='+', default=CONFIGS)
  parser.add_argument('--timeout', type=float, default=1800)
  parser.add_argument('--keep', help='directory to keep the runs in')
  args = parser.parse_args(argv)
  python = args.python or (programs.PYTHON_215 if args.reference
                           else programs.PYTHON_HERE)
  work = args.keep or tempfile.mkdtemp(prefix='easyrec-')
  os.makedirs(work, exist_ok=True)
  try:
    src = prepare(args.source, python, work)
    results = {}
    for name in args.configs:
      results[name] = run_config(name, args.source, python, args.reference,
                                 work, src, args.timeout)
      print(name, json.dumps(results[name]), flush=True)
  finally:
    if not args.keep:
      shutil.rmtree(work, ignore_errors=True)
  commit = subprocess.run(['git', '-C', args.source, 'rev-parse', 'HEAD'],
                          capture_output=True, text=True).stdout.strip()
  output = programs.write_results('easyrec', args.reference, python, results,
                                  easyrec_commit=commit)
  print('->', output)


if __name__ == '__main__':
  main(sys.argv[1:])
