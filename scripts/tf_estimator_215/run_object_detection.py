r"""Runs the Object Detection API's estimator path, here and on 2.15.

    .venv/bin/python scripts/tf_estimator_215/run_object_detection.py
    .venv/bin/python scripts/tf_estimator_215/run_object_detection.py --215

The API (tensorflow/models research/object_detection) has no release of its
own; the environments (`make libraries`, `make libraries-215`) install a
build of it from PyPI, `object-detection-by-ovi` 0.0.1 (February 2023, the
API's TF2 package with slim), --no-deps. Its estimator path is
`model_main.py`: `model_lib.create_estimator_and_inputs`,
`create_train_and_eval_specs`, `tf.estimator.train_and_evaluate`. This runs
that entry point, unchanged, on a tiny SSD (MobileNet V2, Keras feature
extractor, 128x128) over generated TFRecords (16 training and 4 evaluation
images with one or two boxes of two classes), 6 steps, then its evaluation
and export. The build's protos were compiled by a protoc older than both
environments' protobuf: the package is copied into a scratch directory and
its `*_pb2.py` made again, from the descriptors they embed, with the target
environment's protoc (grpcio-tools). The processes get library_harness/
with LIBRARY_HARNESS_TF_NAMES=1 (tf-slim 1.1.0 reads TensorFlow 2.12's
control_flow_ops names).

It records the exit code (and the error's last line), the checkpoints'
steps, the final evaluation's metrics and the exports, to
tests/data/tf_estimator_215/object_detection.json (--215) or
own_tests/object_detection_estimator_rt.json.
"""

import argparse
import io
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

PACKAGE = 'object-detection-by-ovi==0.0.1'
TRAIN_STEPS = 6
IMAGE_SIZE = 96
CLASSES = ('red', 'green')

CONFIG = '''
model {
  ssd {
    num_classes: 2
    image_resizer { fixed_shape_resizer { height: 128 width: 128 } }
    feature_extractor {
      type: "ssd_mobilenet_v2_keras"
      depth_multiplier: 0.25
      min_depth: 8
      conv_hyperparams { HYPERPARAMS }
      override_base_feature_extractor_hyperparams: true
    }
    box_coder { faster_rcnn_box_coder {
      y_scale: 10.0 x_scale: 10.0 height_scale: 5.0 width_scale: 5.0 } }
    matcher { argmax_matcher {
      matched_threshold: 0.5 unmatched_threshold: 0.5 ignore_thresholds: false
      negatives_lower_than_unmatched: true force_match_for_each_row: true } }
    similarity_calculator { iou_similarity { } }
    encode_background_as_zeros: true
    anchor_generator { ssd_anchor_generator {
      num_layers: 6 min_scale: 0.2 max_scale: 0.95
      aspect_ratios: 1.0 aspect_ratios: 2.0 aspect_ratios: 0.5 } }
    box_predictor { convolutional_box_predictor {
      conv_hyperparams { HYPERPARAMS }
      min_depth: 0 max_depth: 0 num_layers_before_predictor: 0
      use_dropout: false kernel_size: 1 box_code_size: 4 } }
    normalize_loss_by_num_matches: true
    loss {
      localization_loss { weighted_smooth_l1 { } }
      classification_loss { weighted_sigmoid_focal { alpha: 0.75 gamma: 2.0 } }
      classification_weight: 1.0
      localization_weight: 1.0
    }
    post_processing {
      batch_non_max_suppression { score_threshold: 1e-8 iou_threshold: 0.6
        max_detections_per_class: 10 max_total_detections: 10 }
      score_converter: SIGMOID
    }
  }
}
train_config {
  batch_size: 2
  optimizer { momentum_optimizer {
    learning_rate { constant_learning_rate { learning_rate: 0.01 } }
    momentum_optimizer_value: 0.9 }
    use_moving_average: false }
  num_steps: STEPS
}
train_input_reader {
  label_map_path: "DATA/label_map.pbtxt"
  tf_record_input_reader { input_path: "DATA/train.record" }
}
eval_config { num_examples: 4 metrics_set: "coco_detection_metrics"
  use_moving_averages: false }
eval_input_reader {
  label_map_path: "DATA/label_map.pbtxt"
  shuffle: false
  num_epochs: 1
  tf_record_input_reader { input_path: "DATA/eval.record" }
}
'''
HYPERPARAMS = '''
        regularizer { l2_regularizer { weight: 0.00004 } }
        initializer { truncated_normal_initializer { stddev: 0.03 } }
        activation: RELU_6
        batch_norm { decay: 0.97 epsilon: 0.001 }'''


def _example(rng: np.random.RandomState, index: int):
  """One image with one or two filled boxes, each of a class's colour."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from PIL import Image  # pylint: disable=g-import-not-at-top
  size = IMAGE_SIZE
  image = (rng.rand(size, size, 3) * 60).astype(np.uint8)
  boxes, labels = [], []
  for _ in range(rng.randint(1, 3)):
    label = rng.randint(1, len(CLASSES) + 1)
    y0, x0 = rng.randint(0, size // 2), rng.randint(0, size // 2)
    y1, x1 = (y0 + rng.randint(16, size // 2), x0 + rng.randint(16, size // 2))
    image[y0:y1, x0:x1, label - 1] = 220
    boxes.append((y0 / size, x0 / size, y1 / size, x1 / size))
    labels.append(label)
  png = io.BytesIO()
  Image.fromarray(image).save(png, format='PNG')
  floats = lambda v: tf.train.Feature(float_list=tf.train.FloatList(value=v))
  ints = lambda v: tf.train.Feature(int64_list=tf.train.Int64List(value=v))
  strings = lambda v: tf.train.Feature(bytes_list=tf.train.BytesList(value=v))
  return tf.train.Example(features=tf.train.Features(feature={
      'image/encoded': strings([png.getvalue()]),
      'image/format': strings([b'png']),
      'image/height': ints([size]), 'image/width': ints([size]),
      'image/source_id': strings([str(index).encode()]),
      'image/filename': strings([f'{index}.png'.encode()]),
      'image/object/bbox/ymin': floats([b[0] for b in boxes]),
      'image/object/bbox/xmin': floats([b[1] for b in boxes]),
      'image/object/bbox/ymax': floats([b[2] for b in boxes]),
      'image/object/bbox/xmax': floats([b[3] for b in boxes]),
      'image/object/class/label': ints(labels),
      'image/object/class/text': strings(
          [CLASSES[l - 1].encode() for l in labels])}))


def write_data(directory: str) -> None:
  """train.record (16 images), eval.record (4) and label_map.pbtxt."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  os.makedirs(directory, exist_ok=True)
  rng = np.random.RandomState(0)
  for name, indices in (('train', range(16)), ('eval', range(16, 20))):
    with tf.io.TFRecordWriter(os.path.join(directory, name + '.record')) as w:
      for i in indices:
        w.write(_example(rng, i).SerializeToString())
  with open(os.path.join(directory, 'label_map.pbtxt'), 'w') as f:
    for i, name in enumerate(CLASSES, 1):
      f.write(f"item {{ id: {i} name: '{name}' }}\n")


REGENERATE_PROTOS = r'''
import ast, glob, os, subprocess, sys
from google.protobuf import descriptor_pb2
protos = sys.argv[1]
files = {}
for path in sorted(glob.glob(os.path.join(protos, '*_pb2.py'))):
  blob = None
  for node in ast.walk(ast.parse(open(path).read())):
    if isinstance(node, ast.keyword) and node.arg == 'serialized_pb':
      blob = ast.literal_eval(node.value)
    elif (isinstance(node, ast.Call) and
          getattr(node.func, 'attr', '') == 'AddSerializedFile'):
      blob = ast.literal_eval(node.args[0])
  proto = descriptor_pb2.FileDescriptorProto()
  proto.ParseFromString(blob)
  files[proto.name] = proto
ordered, done = descriptor_pb2.FileDescriptorSet(), set()
def add(name):
  if name not in done:
    for dependency in files[name].dependency:
      if dependency in files:
        add(dependency)
    ordered.file.append(files[name])
    done.add(name)
for name in sorted(files):
  add(name)
descriptors = os.path.join(protos, 'descriptors.pb')
with open(descriptors, 'wb') as f:
  f.write(ordered.SerializeToString())
root = os.path.dirname(os.path.dirname(protos))
subprocess.run([sys.executable, '-m', 'grpc_tools.protoc',
                '--descriptor_set_in=' + descriptors, '--python_out=' + root]
               + sorted(files), check=True)
'''


def prepare(python: str, work: str) -> str:
  """Copies the installed object_detection into work/src and makes its
  protos again with `python`'s protoc; returns work/src."""
  found = subprocess.run(
      [python, '-c', 'import importlib.util, os; print(os.path.dirname('
       'importlib.util.find_spec("object_detection").origin))'],
      capture_output=True, text=True, timeout=120, check=True,
      env=dict(os.environ, PYTHONPATH=''))
  package = found.stdout.strip().splitlines()[-1]
  src = os.path.join(work, 'src')
  shutil.copytree(package, os.path.join(src, 'object_detection'),
                  ignore=shutil.ignore_patterns('__pycache__'))
  subprocess.run([python, '-c', REGENERATE_PROTOS,
                  os.path.join(src, 'object_detection', 'protos')],
                 check=True, capture_output=True, timeout=300,
                 env=dict(os.environ, PYTHONPATH=''))
  return src


def run(python: str, reference: bool, work: str,
        timeout: float) -> Dict[str, object]:
  src = prepare(python, work)
  data = os.path.join(work, 'data')
  write_data(data)
  config = os.path.join(work, 'ssd.config')
  with open(config, 'w') as f:
    f.write(CONFIG.replace('HYPERPARAMS', HYPERPARAMS).replace(
        'STEPS', str(TRAIN_STEPS)).replace('DATA', data))
  model_dir = os.path.join(work, 'model')
  log = os.path.join(work, 'model_main.log')
  start = time.monotonic()
  code = programs.run(
      programs.runner(python, reference) +
      [os.path.join(src, 'object_detection', 'model_main.py'),
       f'--pipeline_config_path={config}', f'--model_dir={model_dir}',
       f'--num_train_steps={TRAIN_STEPS}', '--alsologtostderr'],
      programs.environment(reference, [src], LIBRARY_HARNESS_TF_NAMES='1'),
      work, log, timeout)
  result = {'exit': code, 'seconds': round(time.monotonic() - start, 1),
            'checkpoint_steps': programs.checkpoint_steps(model_dir),
            'final_eval': programs.final_eval(model_dir),
            'exports': programs.exports(model_dir)}
  if code != 0:
    result['error'] = programs.last_error(log)
  return result


def main(argv: List[str]) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--215', dest='reference', action='store_true',
                      help='run on tf.estimator 2.15 (the reference)')
  parser.add_argument('--python', help='interpreter (default: '
                      '.venv-libraries, or .venv-tf215-libraries with --215)')
  parser.add_argument('--timeout', type=float, default=1800)
  parser.add_argument('--keep', help='directory to keep the run in')
  args = parser.parse_args(argv)
  python = args.python or (programs.PYTHON_215 if args.reference
                           else programs.PYTHON_HERE)
  work = args.keep or tempfile.mkdtemp(prefix='object-detection-')
  os.makedirs(work, exist_ok=True)
  try:
    result = run(python, args.reference, work, args.timeout)
  finally:
    if not args.keep:
      shutil.rmtree(work, ignore_errors=True)
  print(json.dumps(result), flush=True)
  print('->', programs.write_results(
      'object_detection', args.reference, python,
      {'ssd_mobilenet_v2_keras': result}, package=PACKAGE))


if __name__ == '__main__':
  main(sys.argv[1:])
