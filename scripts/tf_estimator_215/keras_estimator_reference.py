r"""tf.estimator 2.15's `tf.keras.estimator.model_to_estimator` on two small
compiled Keras models: the figures estimator_rt's model_to_estimator must
reproduce (tests/test_keras_estimator.py holds them as constants).

    .venv-tf215/bin/python scripts/tf_estimator_215/keras_estimator_reference.py

Importable under TensorFlow 2.15 (tf.keras is Keras 2) and 2.21 (pass
Keras 3 as `keras_module`): `build(program, keras_module)` makes the same
compiled model with the same initial weights (drawn with a fixed numpy
seed, not by the layers' initializers), and `data(program)` the same
numpy data, so both runtimes start from the same point.

Run as a script (under 2.15), for each program it converts the model with
model_to_estimator, trains TRAIN_STEPS SGD steps on batches of BATCH in a
fixed order (no shuffle), and prints as JSON: evaluate()'s metrics, the
first PREDICTED rows of predict(), and the exported serving_default
signature's input and output names.
"""

import json
import sys
import tempfile

import numpy as np

TRAIN_STEPS = 40
BATCH = 32
PREDICTED = 3
PROGRAMS = ('one_output', 'two_outputs')


def data(program: str):
  """(features dict, labels: an array or a dict by output name) for
  `program`: 256 rows of 4 normal features."""
  rng = np.random.RandomState(0)
  x = rng.normal(size=(256, 4)).astype(np.float32)
  classes = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
  if program == 'one_output':
    return {'x': x}, classes
  target = (x[:, 2] - 0.5 * x[:, 3]).reshape(-1, 1).astype(np.float32)
  return {'x': x}, {'cls': classes, 'reg': target}


def build(program: str, keras_module):
  """The compiled model of `program` in `keras_module` (tf.keras under
  2.15, keras under 2.21), its weights drawn from numpy seed 3."""
  layers = keras_module.layers
  inputs = keras_module.Input((4,), name='x')
  if program == 'one_output':
    hidden = layers.Dense(8, activation='relu', name='hidden')(inputs)
    outputs = layers.Dense(2, name='probs')(hidden)
    model = keras_module.Model(inputs, outputs)
    model.compile(
        optimizer=keras_module.optimizers.SGD(0.1),
        loss=keras_module.losses.SparseCategoricalCrossentropy(
            from_logits=True),
        metrics=['accuracy', keras_module.metrics.SparseCategoricalCrossentropy(
            from_logits=True, name='xent')])
  else:
    hidden = layers.Dense(
        8, activation='relu', name='hidden',
        kernel_regularizer=keras_module.regularizers.L2(0.01))(inputs)
    model = keras_module.Model(
        inputs, [layers.Dense(2, name='cls')(hidden),
                 layers.Dense(1, name='reg')(hidden)])
    model.compile(
        optimizer=keras_module.optimizers.SGD(0.05, momentum=0.9),
        loss={'cls': keras_module.losses.SparseCategoricalCrossentropy(
            from_logits=True), 'reg': 'mse'},
        loss_weights={'cls': 1.0, 'reg': 0.5},
        metrics={'cls': ['accuracy'], 'reg': ['mae']})
  rng = np.random.RandomState(3)
  model.set_weights([rng.normal(scale=0.5, size=w.shape).astype(np.float32)
                     for w in model.get_weights()])
  return model


def main():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.get_logger().setLevel('ERROR')
  results = {}
  for program in PROGRAMS:
    features, labels = data(program)
    model = build(program, tf.keras)
    estimator = tf.keras.estimator.model_to_estimator(
        keras_model=model, model_dir=tempfile.mkdtemp())

    def train_input_fn():
      return tf.data.Dataset.from_tensor_slices(
          (features, labels)).repeat().batch(BATCH)

    def eval_input_fn():
      return tf.data.Dataset.from_tensor_slices(
          (features, labels)).batch(64)

    estimator.train(train_input_fn, max_steps=TRAIN_STEPS)
    metrics = estimator.evaluate(eval_input_fn)
    predictions = list(estimator.predict(
        lambda: tf.data.Dataset.from_tensor_slices(
            {'x': features['x'][:PREDICTED]}).batch(PREDICTED)))
    export = estimator.export_saved_model(
        tempfile.mkdtemp(),
        tf.estimator.export.build_raw_serving_input_receiver_fn(
            {'x': tf.constant(features['x'][:1])}))
    signature = tf.saved_model.load(export).signatures['serving_default']
    results[program] = {
        'metrics': {k: float(v) for k, v in metrics.items()},
        'predictions': [{k: v.tolist() for k, v in p.items()}
                        for p in predictions],
        'signature_inputs': sorted(signature.structured_input_signature[1]),
        'signature_outputs': sorted(signature.structured_outputs),
    }
  json.dump(results, sys.stdout, indent=1, sort_keys=True)
  print()


if __name__ == '__main__':
  main()
